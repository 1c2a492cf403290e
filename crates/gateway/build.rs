//! Records build metadata (package and dependency versions from Cargo.lock) for the
//! `package_version` server tool, with the `built` crate.
fn main() {
    built::write_built_file().expect("write built.rs");
}
