//! TLS set-up shared by every outbound client.

/// Installs the rustls crypto provider (ring) once; reqwest is built without a default.
pub fn install() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
