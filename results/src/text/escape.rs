//! Text from a result file made safe for a terminal.

use std::borrow::Cow;

/// `s` with every control character (ESC, BEL, CR, LF, ...; not tab) shown
/// as a `\u{..}` escape. Result files are input: a trace name, host name,
/// device model or path in one cannot move the cursor, clear the screen, set
/// the terminal's title or break a table's rows.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\t') {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}
