//! Durations on the command line: `500ms`, `10s`, `2m`, `1h`, or plain seconds (`1.5`).

use std::time::Duration;

/// Parses a duration as the options take it.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("{text:?} is not a duration (try 500ms, 10s, 2m)"))?;
    let seconds = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("unknown unit {other:?} in {text:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text:?} is out of range"))
}

/// A session timeout: a duration ZooKeeper can take (whole milliseconds in an i32, not zero).
pub fn parse_session_timeout(text: &str) -> Result<Duration, String> {
    let timeout = parse_duration(text)?;
    let millis = timeout.as_millis();
    if millis == 0 || millis > i32::MAX as u128 {
        return Err(format!("a session timeout of {text:?} is not one ZooKeeper takes (1ms to 24 days)"));
    }
    Ok(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_the_rest() {
        assert!(parse_duration("").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1e400").is_err());
        assert!(parse_session_timeout("0").is_err());
        assert!(parse_session_timeout("3000000").is_err());
        assert_eq!(parse_session_timeout("10s"), Ok(Duration::from_secs(10)));
    }
}
