//! ZooKeeper's client protocol, framed: as much of it as the proxy needs to refuse one request
//! the way a throttling server does.
//!
//! Each direction of a connection is a stream of frames, each an `i32` length and that many
//! bytes. The first frame each way is the connect request or response, which has no header.
//! After it, a request is `xid i32, type i32, body` and a reply `xid i32, zxid i64, err i32,
//! body` (notifications have xid -1, pings -2). All integers are big-endian.

use std::io::{self, Read};

/// The largest frame read: far above ZooKeeper's own limit (`jute.maxbuffer`, 1 MiB by default),
/// so that only a stream that is not ZooKeeper's is refused.
const MAX_FRAME: usize = 64 << 20;

/// The error code of a request refused unrun (`KeeperException.Code.THROTTLEDOP`, 3.6+).
const THROTTLED: i32 = -127;

/// `exists`: the request put in place of a throttled one, since it runs nothing.
const EXISTS: i32 = 3;

const LENGTH: usize = 4;
const REQUEST_HEADER: usize = LENGTH + 4 + 4;
const REPLY_HEADER: usize = LENGTH + 4 + 8 + 4;

/// Reads one whole frame, its length prefix included.
///
/// # Errors
/// The stream's error, `UnexpectedEof` when it ends, and `InvalidData` for a length that no
/// ZooKeeper frame has.
pub(crate) fn read_frame(from: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut length = [0u8; LENGTH];
    from.read_exact(&mut length)?;
    let body = usize::try_from(i32::from_be_bytes(length))
        .ok()
        .filter(|&body| body <= MAX_FRAME)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a ZooKeeper frame length"))?;
    let mut frame = vec![0u8; LENGTH + body];
    frame[..LENGTH].copy_from_slice(&length);
    from.read_exact(&mut frame[LENGTH..])?;
    Ok(frame)
}

/// The xid of a request or a reply (both start with it).
pub(crate) fn xid(frame: &[u8]) -> Option<i32> {
    read_i32(frame, LENGTH)
}

/// The operation a request asks for (its type, a ZooKeeper opcode).
pub(crate) fn opcode(request: &[u8]) -> Option<i32> {
    read_i32(request, LENGTH + 4)
}

/// A request with the xid of `request` that runs nothing: `exists` on the same path without a
/// watch. `None` unless the body of `request` starts with a path, as those of create, delete,
/// getData and getChildren do.
pub(crate) fn stand_in(request: &[u8]) -> Option<Vec<u8>> {
    let xid = xid(request)?;
    let path_length = usize::try_from(read_i32(request, REQUEST_HEADER)?).ok()?;
    let path = request.get(REQUEST_HEADER + 4..REQUEST_HEADER + 4 + path_length)?;
    let body_length = 4 + 4 + 4 + path.len() + 1;
    let mut stand_in = Vec::with_capacity(LENGTH + body_length);
    stand_in.extend_from_slice(&i32::try_from(body_length).ok()?.to_be_bytes());
    stand_in.extend_from_slice(&xid.to_be_bytes());
    stand_in.extend_from_slice(&EXISTS.to_be_bytes());
    stand_in.extend_from_slice(&i32::try_from(path.len()).ok()?.to_be_bytes());
    stand_in.extend_from_slice(path);
    stand_in.push(0); // watch: false
    Some(stand_in)
}

/// `reply` as a throttling server sends it: the same xid and zxid, the error `Throttled`, no
/// body. `None` for a frame too short to be a reply.
pub(crate) fn throttled(reply: &[u8]) -> Option<Vec<u8>> {
    let header = reply.get(LENGTH..REPLY_HEADER - 4)?;
    let mut throttled = Vec::with_capacity(REPLY_HEADER);
    throttled.extend_from_slice(&i32::try_from(REPLY_HEADER - LENGTH).ok()?.to_be_bytes());
    throttled.extend_from_slice(header);
    throttled.extend_from_slice(&THROTTLED.to_be_bytes());
    Some(throttled)
}

fn read_i32(frame: &[u8], at: usize) -> Option<i32> {
    let bytes = frame.get(at..at + 4)?;
    Some(i32::from_be_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(xid: i32, opcode: i32, body: &[u8]) -> Vec<u8> {
        let mut frame = i32::try_from(8 + body.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(&xid.to_be_bytes());
        frame.extend_from_slice(&opcode.to_be_bytes());
        frame.extend_from_slice(body);
        frame
    }

    #[test]
    fn frames_are_read_whole_one_at_a_time() {
        let (first, second) = (request(1, 2, b"\0\0\0\x02/a"), request(2, 11, b""));
        let stream = [first.clone(), second.clone()].concat();
        let mut reader = stream.as_slice();
        assert_eq!(read_frame(&mut reader).unwrap(), first);
        assert_eq!(read_frame(&mut reader).unwrap(), second);
        assert_eq!(read_frame(&mut reader).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        let negative = (-5i32).to_be_bytes();
        assert_eq!(read_frame(&mut negative.as_slice()).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn the_stand_in_is_an_unwatched_exists_on_the_same_path_with_the_same_xid() {
        // delete("/lock/n", version -1)
        let delete = request(7, 2, b"\0\0\0\x07/lock/n\xff\xff\xff\xff");
        assert_eq!(opcode(&delete), Some(2));
        assert_eq!(stand_in(&delete).unwrap(), request(7, EXISTS, b"\0\0\0\x07/lock/n\0"));
        assert_eq!(stand_in(&request(7, 2, b"\0\0\0\x09/short")), None, "a path past the frame");
    }

    #[test]
    fn a_throttled_reply_keeps_xid_and_zxid_and_drops_the_body() {
        let mut reply = 24i32.to_be_bytes().to_vec();
        reply.extend_from_slice(&7i32.to_be_bytes());
        reply.extend_from_slice(&0x1234_5678_9abci64.to_be_bytes());
        reply.extend_from_slice(&(-101i32).to_be_bytes()); // NoNode
        reply.extend_from_slice(b"body");
        reply.extend_from_slice(b"more");
        let mut expected = 16i32.to_be_bytes().to_vec();
        expected.extend_from_slice(&reply[4..16]);
        expected.extend_from_slice(&THROTTLED.to_be_bytes());
        assert_eq!(throttled(&reply).unwrap(), expected);
        assert_eq!(xid(&expected), Some(7));
    }
}
