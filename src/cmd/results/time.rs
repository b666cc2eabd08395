//! Calendar dates for `results list` (UTC), without a date crate: the
//! proleptic Gregorian calendar's day numbers (Howard Hinnant's algorithms).

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// `2026-12-02 10:31` (UTC).
pub fn format_utc(unix_s: u64) -> String {
    let (days, secs) = ((unix_s / 86_400) as i64, unix_s % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        secs / 3600,
        secs / 60 % 60
    )
}

/// `YYYY-MM-DD` as the start of that day (UTC), seconds since the epoch.
pub fn parse_date(s: &str) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a date (YYYY-MM-DD)");
    let mut parts = s.trim().splitn(3, '-');
    let mut next = |max: u32| -> Result<u32, String> {
        let v: u32 = parts.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        if max > 0 && !(1..=max).contains(&v) {
            return Err(bad());
        }
        Ok(v)
    };
    let (y, m, d) = (next(0)?, next(12)?, next(31)?);
    if !(1970..=9999).contains(&y) {
        return Err(bad());
    }
    let days = days_from_civil(i64::from(y), m, d);
    if civil_from_days(days) != (i64::from(y), m, d) {
        return Err(format!("'{s}': no such day"));
    }
    Ok(days as u64 * 86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_match_known_days() {
        assert_eq!(parse_date("1970-01-01"), Ok(0));
        assert_eq!(parse_date("2026-12-02"), Ok(1_796_169_600));
        assert_eq!(
            format_utc(1_796_169_600 + 3600 * 10 + 60 * 31),
            "2026-12-02 10:31"
        );
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00");
        assert!(parse_date("2026-02-30").is_err());
        assert!(parse_date("2026-13-01").is_err());
        assert!(parse_date("yesterday").is_err());
    }
}
