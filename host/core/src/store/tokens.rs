//! Access tokens: what a client of a network `seshat serve` proves who it is with. A token is
//! shown once, when it is made; the store keeps its id in the clear and its secret only as a
//! salted SHA-256 hash. A token acts for one user, may be read-only, may expire, and is revoked
//! by its id.

use sha2::{Digest, Sha256};

use super::db::{Db, params};
use super::{Error, Result, Store, now_ms};

/// What every token starts with (so a leaked one is recognisable to secret scanners).
const PREFIX: &str = "seshat_";
/// Bytes of randomness in a token's secret, and in its hash's salt.
const SECRET_BYTES: usize = 32;
const SALT_BYTES: usize = 16;

pub use seshat_protocol::principals::{NewToken, TokenInfo};

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
    /// When the token stops working (Unix milliseconds), if ever.
    pub expires_at: Option<i64>,
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
    /// Its user is disabled.
    UserDisabled,
}

impl Refusal {
    /// The stable code: `token_invalid`, `token_expired`, `token_revoked` or `user_disabled`.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Invalid => "token_invalid",
            Refusal::Expired => "token_expired",
            Refusal::Revoked => "token_revoked",
            Refusal::UserDisabled => "user_disabled",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::Invalid => "the token is not valid: ask whoever runs the service for one",
            Refusal::Expired => "the token has expired: ask for a new one",
            Refusal::Revoked => "the token was revoked: ask for a new one",
            Refusal::UserDisabled => "the token's user is disabled: ask whoever runs the service",
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
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

/// A token's id and secret: `seshat_<id>_<secret>`, both lower-case hex.
fn parse(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let hexish = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hexish(id, 16) && hexish(secret, 2 * SECRET_BYTES)).then_some((id, secret))
}

/// Inserts a new token for `user` (matched whatever its case) in `tx`, made by `caller`, who must
/// be an admin.
fn insert_token(tx: &Db, caller: &str, user: &str, read_only: bool, expires_at: Option<i64>) -> Result<NewToken> {
    super::owners::check_admin(tx, caller, "make tokens")?;
    let id = hex(&random(8)?);
    let secret = hex(&random(SECRET_BYTES)?);
    let salt = random(SALT_BYTES)?;
    let now = now_ms();
    if expires_at.is_some_and(|e| e <= now) {
        return Err(Error::Principal("the token would expire before it is made: give a later time".into()));
    }
    let name: Option<String> =
        tx.query_opt("SELECT name FROM users WHERE lower(name) = lower(?1) ORDER BY name", params![user], |r| {
            r.get(0)
        })?;
    let Some(name) = name else {
        return Err(Error::Principal(format!("no user named `{}`: add the user first", user.escape_debug())));
    };
    tx.execute(
        "INSERT INTO tokens (id, user_name, salt, hash, read_only, created_at, expires_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![id, name, salt, hash(&salt, &secret), read_only, now, expires_at],
    )?;
    Ok(NewToken {
        info: TokenInfo {
            id: id.clone(),
            user: name,
            read_only,
            created_at: now,
            expires_at,
            revoked_at: None,
            last_used_at: None,
        },
        token: format!("{PREFIX}{id}_{secret}"),
    })
}

/// The id part of what looks like a token (for the audit trail of a refused one), never its
/// secret.
pub fn token_id(token: &str) -> Option<&str> {
    parse(token).map(|(id, _)| id)
}

/// What decides whether a token works now.
struct TokenRow {
    user: String,
    read_only: bool,
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
    disabled_at: Option<i64>,
}

impl TokenRow {
    /// Who token `id` acts for now, or why it is refused.
    fn state(self, id: &str) -> std::result::Result<Caller, Refusal> {
        if self.revoked_at.is_some() {
            return Err(Refusal::Revoked);
        }
        if self.expires_at.is_some_and(|e| e <= now_ms()) {
            return Err(Refusal::Expired);
        }
        if self.disabled_at.is_some() {
            return Err(Refusal::UserDisabled);
        }
        Ok(Caller { user: self.user, read_only: self.read_only, token: id.to_string(), expires_at: self.expires_at })
    }
}

/// How often, at most, a token's last use is written (its listing shows it to the minute).
const LAST_USE_EVERY_MS: i64 = 60_000;

impl Store {
    /// Makes a token acting for `user` (who must exist), read-only when `read_only`, working
    /// until `expires_at` (Unix milliseconds) when given. The token is in the answer only.
    /// The store's operator ([`super::LOCAL_USER`]) gets none this way: see
    /// [`Store::create_operator_token`]. An admin's act.
    pub fn create_token(&mut self, user: &str, read_only: bool, expires_at: Option<i64>) -> Result<NewToken> {
        if user.eq_ignore_ascii_case(super::LOCAL_USER) {
            return Err(Error::Principal(format!(
                "`{}` is the store's operator: a network token for it acts as the operator from anywhere; make the \
                 client a user of its own, or ask for an operator's token explicitly",
                super::LOCAL_USER
            )));
        }
        self.make_token(user, read_only, expires_at)
    }

    /// A token acting as the store's operator ([`super::LOCAL_USER`]), asked for explicitly.
    pub fn create_operator_token(&mut self, read_only: bool, expires_at: Option<i64>) -> Result<NewToken> {
        self.make_token(super::LOCAL_USER, read_only, expires_at)
    }

    /// Revokes token `id` and makes a new one for the same user, access and expiry, in one
    /// transaction. An admin's act.
    pub fn rotate_token(&mut self, id: &str) -> Result<NewToken> {
        on_db!(self, "rotate a token", {
            let row: Option<(String, bool, Option<i64>)> = self.db.query_opt(
                "SELECT user_name, read_only, expires_at FROM tokens WHERE id = ?1 AND revoked_at IS NULL",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let Some((user, read_only, expires_at)) = row else {
                return Err(Error::Principal(format!(
                    "no token in force with id `{}` (`tokens list` shows them); nothing was changed",
                    id.escape_debug()
                )));
            };
            let tx = self.db.transaction()?;
            let made = insert_token(&tx, &self.user, &user, read_only, expires_at)?;
            tx.execute(
                "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                params![id, now_ms()],
            )?;
            tx.commit()?;
            Ok(made)
        })
    }

    fn make_token(&mut self, user: &str, read_only: bool, expires_at: Option<i64>) -> Result<NewToken> {
        on_db!(self, "create a token", {
            let tx = self.db.transaction()?;
            let made = insert_token(&tx, &self.user, user, read_only, expires_at)?;
            tx.commit()?;
            Ok(made)
        })
    }

    /// The tokens, of `user` or of everyone, oldest first (never their secrets). An admin's.
    pub fn tokens(&self, user: Option<&str>) -> Result<Vec<TokenInfo>> {
        on_db!(self, "list tokens", {
            super::owners::check_admin(&self.db, &self.user, "list tokens")?;
            self.db.query_vec(
                "SELECT id, user_name, read_only, created_at, expires_at, revoked_at, last_used_at FROM tokens \
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
                        last_used_at: r.get(6)?,
                    })
                },
            )
        })
    }

    /// Revokes the token `id`: it is refused from now on. Returns whether it was in force.
    pub fn revoke_token(&mut self, id: &str) -> Result<bool> {
        on_db!(self, "revoke a token", {
            super::owners::check_admin(&self.db, &self.user, "revoke tokens")?;
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

    /// Who `token` acts for, or why it is refused; a token accepted has its last use noted. One
    /// read of the token and its user, proven by the secret before anything else is told.
    pub fn authenticate(&self, token: &str) -> Result<std::result::Result<Caller, Refusal>> {
        on_db!(self, "check a token", {
            let Some((id, secret)) = parse(token) else { return Ok(Err(Refusal::Invalid)) };
            let secrets = |r: &super::db::Row<'_>| -> Result<(Vec<u8>, Vec<u8>, Option<i64>)> {
                Ok((r.get(5)?, r.get(6)?, r.get(7)?))
            };
            let Some((row, (salt, stored, last_used))) = self.token_row(id, secrets)? else {
                return Ok(Err(Refusal::Invalid));
            };
            if !same(&hash(&salt, secret), &stored) {
                return Ok(Err(Refusal::Invalid));
            }
            let state = row.state(id);
            let now = now_ms();
            if state.is_ok() && last_used.is_none_or(|t| now - t >= LAST_USE_EVERY_MS) {
                self.db.execute("UPDATE tokens SET last_used_at = ?2 WHERE id = ?1", params![id, now])?;
            }
            Ok(state)
        })
    }

    /// Whether the token `id` (already proven by its secret) still works now, and for whom:
    /// revoked, expired, its user disabled or removed are refused. What a server checks its open
    /// connections with when access changes.
    pub fn token_state(&self, id: &str) -> Result<std::result::Result<Caller, Refusal>> {
        on_db!(self, "check a token", {
            Ok(self.token_row(id, |_| Ok(()))?.map_or(Err(Refusal::Invalid), |(row, ())| row.state(id)))
        })
    }

    /// Token `id` with its user's state, and what `more` reads of the rest of the row (the
    /// salt, the hash and the last use are columns 5 to 7); `None` when there is no such token.
    fn token_row<T>(&self, id: &str, more: impl Fn(&super::db::Row<'_>) -> Result<T>) -> Result<Option<(TokenRow, T)>> {
        self.db.query_opt(
            "SELECT t.user_name, t.read_only, t.expires_at, t.revoked_at, u.disabled_at, t.salt, t.hash, \
             t.last_used_at FROM tokens t JOIN users u ON u.name = t.user_name WHERE t.id = ?1",
            params![id],
            |r| {
                let row = TokenRow {
                    user: r.get(0)?,
                    read_only: r.get(1)?,
                    expires_at: r.get(2)?,
                    revoked_at: r.get(3)?,
                    disabled_at: r.get(4)?,
                };
                Ok((row, more(r)?))
            },
        )
    }

    /// A number that moves whenever a token, a user or a grant changes in a way that can take
    /// access away (every process sharing the store sees it move).
    pub fn access_version(&self) -> Result<i64> {
        on_db!(self, "read the access version", {
            self.db.query_value("SELECT version FROM access_epoch WHERE id = 1", params![])
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
        // Differences that would cancel out if they were combined by anything but "any".
        assert!(!same(&[1, 1], &[0, 0]));
        assert!(!same(&[1, 2, 3], &[0, 2, 2]));
    }
}
