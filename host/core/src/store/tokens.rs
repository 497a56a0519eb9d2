//! Access tokens: what a client of a network `seshat serve` proves who it is with. A token is
//! shown once, when it is made; the store keeps its id in the clear and its secret only as a
//! salted SHA-256 hash. A token acts for one user, may be read-only, may expire, and is revoked
//! by its id.

use sha2::{Digest, Sha256};

use super::db::params;
use super::{Error, Result, Store, now_ms};

/// What every token starts with (so a leaked one is recognisable to secret scanners).
const PREFIX: &str = "seshat_";
/// Bytes of randomness in a token's secret, and in its hash's salt.
const SECRET_BYTES: usize = 32;
const SALT_BYTES: usize = 16;

/// A token as listed: everything but its secret.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct TokenInfo {
    /// Its id (what `tokens revoke` takes; part of the token itself).
    pub id: String,
    /// The user it acts for.
    pub user: String,
    /// Whether it may only read.
    pub read_only: bool,
    /// Unix milliseconds.
    pub created_at: i64,
    /// When it stops working (Unix milliseconds), if ever.
    pub expires_at: Option<i64>,
    /// When it was revoked (Unix milliseconds), if it was.
    pub revoked_at: Option<i64>,
}

/// A new token: its listing and the token itself, which nothing stores.
#[derive(Debug)]
#[non_exhaustive]
pub struct NewToken {
    /// What [`Store::tokens`] will list.
    pub info: TokenInfo,
    /// The token: `seshat_<id>_<secret>`. Shown once.
    pub token: String,
}

/// Who a token proved the caller to be.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller {
    /// The user.
    pub user: String,
    /// Whether the token may only read.
    pub read_only: bool,
    /// The token's id.
    pub token: String,
}

/// Why a token was refused: one reason per code, never the token itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Not a token this store made (or not a token at all).
    Invalid,
    /// Past its expiry.
    Expired,
    /// Revoked.
    Revoked,
}

impl Refusal {
    /// The stable code: `token_invalid`, `token_expired` or `token_revoked`.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Invalid => "token_invalid",
            Refusal::Expired => "token_expired",
            Refusal::Revoked => "token_revoked",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::Invalid => "the token is not valid: ask whoever runs the service for one",
            Refusal::Expired => "the token has expired: ask for a new one",
            Refusal::Revoked => "the token was revoked: ask for a new one",
        })
    }
}

/// `bytes` random bytes from the operating system.
fn random(bytes: usize) -> Result<Vec<u8>> {
    let mut out = vec![0u8; bytes];
    getrandom::fill(&mut out).map_err(|e| Error::Principal(format!("no randomness for a token: {e}")))?;
    Ok(out)
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The salted hash a secret is kept as.
fn hash(salt: &[u8], secret: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(secret.as_bytes());
    h.finalize().to_vec()
}

/// Equal without telling how much of it matched (by timing).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A token's id and secret: `seshat_<id>_<secret>`, both lower-case hex.
fn parse(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let hexish = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hexish(id, 16) && hexish(secret, 2 * SECRET_BYTES)).then_some((id, secret))
}

impl Store {
    /// Makes a token acting for `user` (who must exist), read-only when `read_only`, working
    /// until `expires_at` (Unix milliseconds) when given. The token is in the answer only.
    pub fn create_token(&mut self, user: &str, read_only: bool, expires_at: Option<i64>) -> Result<NewToken> {
        on_db!(self, "create a token", {
            let id = hex(&random(8)?);
            let secret = hex(&random(SECRET_BYTES)?);
            let salt = random(SALT_BYTES)?;
            let now = now_ms();
            if expires_at.is_some_and(|e| e <= now) {
                return Err(Error::Principal("the token would expire before it is made: give a later time".into()));
            }
            let tx = self.db.transaction()?;
            let added = tx.execute(
                "INSERT INTO tokens (id, user_name, salt, hash, read_only, created_at, expires_at) \
                 SELECT ?1, name, ?3, ?4, ?5, ?6, ?7 FROM users WHERE name = ?2",
                params![id, user, salt, hash(&salt, &secret), read_only, now, expires_at],
            )?;
            if added == 0 {
                return Err(Error::Principal(format!("no user named `{}`: add the user first", user.escape_debug())));
            }
            tx.commit()?;
            Ok(NewToken {
                info: TokenInfo {
                    id: id.clone(),
                    user: user.to_string(),
                    read_only,
                    created_at: now,
                    expires_at,
                    revoked_at: None,
                },
                token: format!("{PREFIX}{id}_{secret}"),
            })
        })
    }

    /// The tokens, of `user` or of everyone, oldest first (never their secrets).
    pub fn tokens(&self, user: Option<&str>) -> Result<Vec<TokenInfo>> {
        on_db!(self, "list tokens", {
            self.db.query_vec(
                "SELECT id, user_name, read_only, created_at, expires_at, revoked_at FROM tokens \
                 WHERE CAST(?1 AS TEXT) IS NULL OR user_name = ?1 ORDER BY created_at, id",
                params![user],
                |r| {
                    Ok(TokenInfo {
                        id: r.get(0)?,
                        user: r.get(1)?,
                        read_only: r.get(2)?,
                        created_at: r.get(3)?,
                        expires_at: r.get(4)?,
                        revoked_at: r.get(5)?,
                    })
                },
            )
        })
    }

    /// Revokes the token `id`: it is refused from now on. Returns whether it was in force.
    pub fn revoke_token(&mut self, id: &str) -> Result<bool> {
        on_db!(self, "revoke a token", {
            let known: bool = self.db.query_value("SELECT EXISTS (SELECT 1 FROM tokens WHERE id = ?1)", params![id])?;
            if !known {
                return Err(Error::Principal(format!(
                    "no token with id `{}` (an id is the 16 hex digits after `seshat_` in the token)",
                    id.escape_debug()
                )));
            }
            let n = self.db.execute(
                "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                params![id, now_ms()],
            )?;
            Ok(n > 0)
        })
    }

    /// Who `token` acts for, or why it is refused.
    pub fn authenticate(&self, token: &str) -> Result<std::result::Result<Caller, Refusal>> {
        on_db!(self, "check a token", {
            let Some((id, secret)) = parse(token) else { return Ok(Err(Refusal::Invalid)) };
            let row = self.db.query_opt(
                "SELECT user_name, salt, hash, read_only, expires_at, revoked_at FROM tokens WHERE id = ?1",
                params![id],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<Vec<u8>>(1)?,
                        r.get::<Vec<u8>>(2)?,
                        r.get::<bool>(3)?,
                        r.get::<Option<i64>>(4)?,
                        r.get::<Option<i64>>(5)?,
                    ))
                },
            )?;
            let Some((user, salt, stored, read_only, expires_at, revoked_at)) = row else {
                return Ok(Err(Refusal::Invalid));
            };
            if !same(&hash(&salt, secret), &stored) {
                return Ok(Err(Refusal::Invalid));
            }
            if revoked_at.is_some() {
                return Ok(Err(Refusal::Revoked));
            }
            if expires_at.is_some_and(|e| e <= now_ms()) {
                return Ok(Err(Refusal::Expired));
            }
            Ok(Ok(Caller { user, read_only, token: id.to_string() }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_parses_only_in_its_own_shape() {
        let t = format!("seshat_{}_{}", "a".repeat(16), "0".repeat(64));
        assert_eq!(parse(&t), Some(("aaaaaaaaaaaaaaaa", "0".repeat(64).as_str())));
        assert_eq!(parse(&t[1..]), None);
        assert_eq!(parse(&format!("{t}0")), None);
        assert_eq!(parse(&t.replace("_0", "_g")), None);
        assert_eq!(parse("Bearer x"), None);
    }

    #[test]
    fn the_hash_depends_on_salt_and_secret_and_compares_whole() {
        let h = hash(b"salt", "secret");
        assert!(same(&h, &hash(b"salt", "secret")));
        assert!(!same(&h, &hash(b"salt2", "secret")));
        assert!(!same(&h, &hash(b"salt", "secret2")));
        assert!(!same(&h, &h[..31]));
    }
}
