fn main() -> std::process::ExitCode {
    nettune::main_exit()
}
