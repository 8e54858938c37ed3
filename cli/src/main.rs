//! The `flightrec` command; everything is in the library (`flightrec_cli`).

fn main() -> std::process::ExitCode {
    flightrec_cli::run(std::env::args_os())
}
