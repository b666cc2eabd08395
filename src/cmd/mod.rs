//! One module per subcommand: its arguments and its printing.

pub mod export;
pub mod info;
