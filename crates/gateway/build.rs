//! Records build metadata (package and dependency versions from Cargo.lock) for the
//! `package_version` server tool, with the `built` crate. A failure fails the build.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    built::write_built_file()?;
    Ok(())
}
