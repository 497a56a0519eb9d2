//! TLS to a PostgreSQL server (rustls), as libpq's `sslmode` asks: `verify-ca`/`verify-full`
//! verify the server's certificate against the root certificate given (or the system's roots) and
//! its host name; `prefer` and `require` encrypt without verifying unless a root certificate is
//! given, as libpq does.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::location::TlsMode;
use super::{Error, Result, Server};

/// The connector for `server`.
pub(super) fn connector(server: &Server) -> Result<MakeRustlsConnect> {
    // Whoever installs first wins; ring is the one built in.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Unreachable(format!("cannot set up TLS: {e}")))?;
    let config = match (server.tls(), server.root_cert()) {
        (_, Some(file)) => {
            let pem = std::fs::read(file)
                .map_err(|e| Error::Unreachable(format!("cannot read the root certificate {}: {e}", file.display())))?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
                let cert: CertificateDer<'_> = cert.map_err(|e| {
                    Error::Unreachable(format!("the root certificate {} is not PEM: {e}", file.display()))
                })?;
                roots.add(cert).map_err(|e| {
                    Error::Unreachable(format!("the root certificate {} is not usable: {e}", file.display()))
                })?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        (TlsMode::Verify, None) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        _ => builder.dangerous().with_custom_certificate_verifier(Arc::new(Unverified(provider))).with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// Encryption without verifying who the server is: libpq's `prefer` and `require` without a root
/// certificate. Signatures are still checked, so the session key is the server's.
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
