//! A certificate authority made for a test, and a loopback server certificate it signed.

/// A test CA and the server certificate it signed for `localhost` and `127.0.0.1`, as PEM.
pub struct Authority {
    /// The CA's certificate: what a client trusts.
    pub ca: String,
    /// The server's certificate.
    pub cert: String,
    /// The server's private key.
    pub key: String,
}

impl Authority {
    pub fn new() -> Authority {
        Authority::for_names(&["localhost", "127.0.0.1"])
    }

    /// A CA whose server certificate names only `names`.
    pub fn for_names(names: &[&str]) -> Authority {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "Seshat tests CA");
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        Authority { ca: ca.pem(), cert: cert.pem(), key: key.serialize_pem() }
    }

    /// A rustls client configuration trusting this CA only.
    pub fn client_config(&self) -> std::sync::Arc<rustls::ClientConfig> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        std::sync::Arc::new(config)
    }
}
