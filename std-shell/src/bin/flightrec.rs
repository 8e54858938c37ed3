//! The flightrec host command-line tool.
fn main() {}
