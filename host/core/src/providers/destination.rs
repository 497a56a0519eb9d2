//! Where a provider's request may go: a host that both the plugin's manifest and the user's
//! configuration allow. The configuration allows exactly the base URL's origin (scheme, host,
//! port); the manifest allows listed origins, and `{base_url}` means whatever the user set.

use reqwest::Url;

/// A checked destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The URL to send to.
    pub url: Url,
    /// Plain http to a host that is not this machine (the user configured it; warn them).
    pub insecure_remote: bool,
}

/// `scheme://host:port` of a URL.
pub fn origin(url: &Url) -> String {
    format!("{}://{}:{}", url.scheme(), url.host_str().unwrap_or_default(), url.port_or_known_default().unwrap_or(0))
}

/// Whether `url` names a server on this machine or its own network (loopback, a private or
/// link-local address, `localhost`): a local model server, whose prompt cache costs nothing to
/// fill. (A name is not looked up: only `localhost` counts.)
pub(crate) fn is_local(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00 || (ip.segments()[0] & 0xffc0) == 0xfe80
        }
        None => false,
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Checks `url` (built by `plugin`) against the manifest's `allowed` hosts and the base URL.
/// `base_configured`: the user set the base URL (plain http is allowed only then). The error
/// text names the plugin and the host; nothing has been sent when it is returned.
pub fn check(
    plugin: &str,
    url: &str,
    allowed: &[String],
    base_url: &str,
    base_configured: bool,
) -> Result<Destination, String> {
    let target = Url::parse(url).map_err(|e| format!("provider `{plugin}` built an invalid URL `{url}`: {e}"))?;
    let base = Url::parse(base_url).map_err(|e| format!("the base URL `{base_url}` is invalid: {e}"))?;
    let host = target.host_str().unwrap_or_default().to_string();
    if !matches!(target.scheme(), "http" | "https") || host.is_empty() {
        return Err(format!(
            "provider `{plugin}` asked to send to `{url}`, which is not an http(s) URL; nothing was sent"
        ));
    }
    if origin(&target) != origin(&base) {
        return Err(format!(
            "provider `{plugin}` asked to send to host `{host}`, but the configured base URL is {}; nothing was sent",
            origin(&base)
        ));
    }
    let manifest_allows = allowed.iter().any(|entry| {
        if entry == "{base_url}" {
            return base_configured;
        }
        let entry = if entry.contains("://") { entry.clone() } else { format!("https://{entry}") };
        Url::parse(&entry).is_ok_and(|e| origin(&e) == origin(&target))
    });
    if !manifest_allows {
        return Err(format!(
            "provider `{plugin}`'s manifest does not allow host `{host}` (allowed_hosts: {allowed:?}); nothing was sent"
        ));
    }
    if target.scheme() == "http" && !base_configured {
        return Err(format!(
            "provider `{plugin}` asked for plain http to `{host}`, which the user did not configure; nothing was sent"
        ));
    }
    let insecure_remote = target.scheme() == "http" && !is_loopback(&target);
    Ok(Destination { url: target, insecure_remote })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_this_machine_and_its_own_network_are_local() {
        let local = |u: &str| is_local(&Url::parse(u).unwrap());
        for u in ["http://127.0.0.1:8080/v1", "http://localhost:11434", "http://[::1]:1234", "http://192.168.1.20:8000"]
        {
            assert!(local(u), "{u}");
        }
        for u in [
            "http://10.1.2.3:8000",
            "http://172.16.0.9",
            "http://169.254.1.1",
            "http://[fd00::1]:80",
            "http://[fe80::1]:80",
        ] {
            assert!(local(u), "{u}");
        }
        for u in [
            "https://api.anthropic.com/v1",
            "https://api.openai.com",
            "http://llm.corp.local:8000",
            "https://llm.example.com",
        ] {
            assert!(!local(u), "{u}");
        }
    }

    #[test]
    fn both_the_manifest_and_the_config_must_allow_the_origin() {
        let anthropic = hosts(&["https://api.anthropic.com", "{base_url}"]);
        let ok = check("a", "https://api.anthropic.com/v1/messages", &anthropic, "https://api.anthropic.com", false);
        assert!(!ok.unwrap().insecure_remote);
        // The user pointed it elsewhere: `{base_url}` allows exactly that.
        let local = check("a", "http://127.0.0.1:8080/v1/messages", &anthropic, "http://127.0.0.1:8080", true);
        assert!(!local.unwrap().insecure_remote);
        let remote = check("a", "http://10.1.2.3:80/v1", &anthropic, "http://10.1.2.3", true).unwrap();
        assert!(remote.insecure_remote);
        // Another port of the same host is another origin.
        let err = check("a", "http://127.0.0.1:9090/x", &anthropic, "http://127.0.0.1:8080", true).unwrap_err();
        assert!(err.contains("`a`") && err.contains("127.0.0.1"), "{err}");
        // A manifest without `{base_url}` refuses a configured host it does not list.
        let fixed = hosts(&["api.example.com"]);
        let err = check("p", "https://evil.test/x", &fixed, "https://evil.test", true).unwrap_err();
        assert!(err.contains("manifest does not allow host `evil.test`"), "{err}");
        assert!(check("p", "https://api.example.com/v1", &fixed, "https://api.example.com", false).is_ok());
        let err = check("p", "file:///etc/passwd", &fixed, "https://api.example.com", false).unwrap_err();
        assert!(err.contains("not an http(s) URL"), "{err}");
    }
}
