//! Formatting helpers for human-readable output: the units are the results
//! crate's (the reports there use them too).

pub use results::text::units::{bytes, duration_ns};

/// `s` with every control character (ESC, BEL, CR, ...; not tab) shown as a
/// `\u{..}` escape (see [`results::text::escape_control`]), so text from
/// input files cannot move the cursor, clear the screen or set the title.
pub fn escape_control(s: &str) -> String {
    results::text::escape_control(s).into_owned()
}

#[cfg(test)]
mod escape_tests {
    use super::escape_control;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(
            escape_control("host\u{1b}]0;pwned\u{7}\u{1b}[2J é\tok"),
            "host\\u{1b}]0;pwned\\u{7}\\u{1b}[2J é\tok"
        );
        assert_eq!(escape_control("plain"), "plain");
    }
}
