//! One module per subcommand: its arguments and its printing.

pub mod args;
pub mod calibrate;
pub mod capture;
pub mod compare;
pub mod consistency;
pub mod convert;
pub mod export;
pub mod fleet;
pub mod info;
pub mod merge;
pub mod replay;
pub mod results;
pub mod store;
pub mod suite;
