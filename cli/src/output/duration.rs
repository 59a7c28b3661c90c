//! Durations on the command line: every form the command prints (`500ms`, `3.3s`, `1m30s`,
//! `1h0m5s`) and humantime's (`2min`, `1h 30m`), or plain seconds (`1.5`); and durations in
//! messages, rounded to what a person reads (`3.3s`, not `3.333333333s`).

use std::time::Duration;

/// Parses a duration as the options take it: humantime's forms, which include all that
/// [`human`] prints, or a plain number of seconds (the options took those first).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("{text:?} is negative: give a duration >= 0 (500ms, 10s, 1m30s)"));
    }
    if let Ok(seconds) = text.parse::<f64>() {
        if text.bytes().all(|byte| byte.is_ascii_digit() || byte == b'.') {
            return Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text:?} is out of range"));
        }
    }
    humantime::parse_duration(text).map_err(|err| format!("{text:?} is not a duration ({err}; try 500ms, 10s, 1m30s)"))
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

/// `duration` as a person reads it, in the units the options take: whole milliseconds below a
/// second, tenths of a second below ten, then whole seconds, minutes and hours (`250ms`, `3.3s`,
/// `10s`, `1m30s`, `2h`).
pub fn human(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    if millis < 10_000 {
        let tenths = (millis + 50) / 100;
        return match tenths % 10 {
            0 => format!("{}s", tenths / 10),
            tenth => format!("{}.{tenth}s", tenths / 10),
        };
    }
    let seconds = (millis + 500) / 1000;
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let parts = [(hours, "h"), (minutes, "m"), (seconds, "s")];
    let first = parts.iter().position(|(value, _)| *value > 0).unwrap_or(2);
    let last = parts.iter().rposition(|(value, _)| *value > 0).unwrap_or(2);
    parts[first..=last].iter().map(|(value, unit)| format!("{value}{unit}")).collect()
}

/// A duration to the second, as [`human`] says it ("<1s", "12s", "1m30s"): for clocks a person
/// reads, where tenths would only flicker. Under a second is "<1s": "0s" read as "not at all".
pub fn whole_seconds(duration: Duration) -> String {
    match duration.as_secs() {
        0 => "<1s".to_owned(),
        seconds => human(Duration::from_secs(seconds)),
    }
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
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
    }

    /// Issue 39 item 7: `--timeout 1m30s` was refused while messages said `1m30s`.
    #[test]
    fn reads_back_every_duration_it_prints() {
        let millis = [0, 1, 250, 999, 1000, 1234, 3333, 9960, 10_000, 33_333, 60_000, 90_000, 3_605_000, 7_200_000];
        for duration in millis.map(Duration::from_millis) {
            for say in [human, whole_seconds] {
                let said = say(duration);
                if said == "<1s" {
                    // A clock's reading, not a duration to type back.
                    continue;
                }
                let read = parse_duration(&said).unwrap_or_else(|err| panic!("{said}: {err}"));
                assert_eq!(say(read), said);
            }
        }
    }

    #[test]
    fn refuses_the_rest() {
        assert!(parse_duration("").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("-1s").is_err_and(|err| err.contains(">= 0")));
        assert!(parse_duration("1.5.2").is_err());
        assert!(parse_duration("NaN").is_err());
        assert!(parse_duration("inf").is_err());
        assert!(parse_duration("1e400").is_err());
        assert!(parse_session_timeout("0").is_err());
        assert!(parse_session_timeout("3000000").is_err());
        assert_eq!(parse_session_timeout("10s"), Ok(Duration::from_secs(10)));
    }

    #[test]
    fn human_durations_are_rounded_to_what_a_person_reads() {
        let cases = [
            (Duration::from_nanos(3_333_333_333), "3.3s"),
            (Duration::from_nanos(1_333_333_333), "1.3s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_micros(333_333), "333ms"),
            (Duration::ZERO, "0ms"),
            (Duration::from_millis(999), "999ms"),
            (Duration::from_millis(1000), "1s"),
            (Duration::from_millis(9_960), "10s"),
            (Duration::from_secs(10), "10s"),
            (Duration::from_millis(33_333), "33s"),
            (Duration::from_secs(60), "1m"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(7200), "2h"),
            (Duration::from_secs(3605), "1h0m5s"),
        ];
        for (duration, said) in cases {
            assert_eq!(human(duration), said, "{duration:?}");
        }
    }
}
