//! The plugin contract's WIT, every version this host speaks, as built into the binary: a user
//! without the repository gets it with `seshat plugins wit`.

/// Each contract version and its WIT, oldest first; the last is [`super::API_VERSION_CURRENT`].
const VERSIONS: [(&str, &str); 4] = [
    ("0.1.0", include_str!("../../../../wit/v0.1.0/seshat-plugin.wit")),
    ("0.2.0", include_str!("../../../../wit/v0.2.0/seshat-plugin.wit")),
    ("0.3.0", include_str!("../../../../wit/v0.3.0/seshat-plugin.wit")),
    ("0.4.0", include_str!("../../../../wit/seshat-plugin.wit")),
];

/// The contract versions whose WIT this host carries, oldest first.
pub fn wit_versions() -> impl Iterator<Item = &'static str> {
    VERSIONS.iter().map(|(v, _)| *v)
}

/// The WIT of contract `version` (`0.4.0`, `0.4` or `v0.4.0`), if this host speaks it.
pub fn wit(version: &str) -> Option<&'static str> {
    let version = version.strip_prefix('v').unwrap_or(version);
    VERSIONS.iter().find(|(v, _)| *v == version || v.strip_suffix(".0") == Some(version)).map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_names_itself_and_the_newest_is_the_current_one() {
        for v in wit_versions() {
            let text = wit(v).expect("carried");
            assert!(text.contains(&format!("package seshat:plugin@{v};")), "{v}");
        }
        assert_eq!(wit_versions().last(), Some(super::super::API_VERSION_CURRENT));
        assert_eq!(wit("v0.2"), wit("0.2.0"));
        assert_eq!(wit("0.5.0"), None);
    }
}
