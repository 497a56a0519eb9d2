//! Who `seshat users`, `tokens` and `scopes` act on: the store directly (as its operator, an
//! admin who can never be locked out), or, with `--remote`, the service as the token's user
//! (the service checks that they may).

use seshat::store::{Access, Grant, NewToken, Removed, Store, TokenInfo, UserInfo};
use seshat_protocol::methods as m;

use crate::Context;
use crate::remote::Remote;

/// The store, or the service.
pub enum Principals {
    /// This machine's store, as its operator.
    Local(Box<Store>),
    /// The `--remote` service, as the token's user.
    Remote(Box<Remote>),
}

impl Principals {
    /// The `--remote` service when given, else the store.
    pub fn open(ctx: &Context) -> anyhow::Result<Principals> {
        Ok(match ctx.remote()? {
            Some(remote) => Principals::Remote(Box::new(remote)),
            None => Principals::Local(Box::new(ctx.store()?)),
        })
    }

    /// Adds a user, an admin when `admin`.
    pub fn add_user(&mut self, name: &str, admin: bool) -> anyhow::Result<()> {
        match self {
            Principals::Local(s) => Ok(s.add_user_as(name, admin)?),
            Principals::Remote(r) => {
                r.request::<m::UsersAdd>(&m::UsersAddParams { name: name.into(), admin })?;
                Ok(())
            }
        }
    }

    /// The users with their role and state.
    pub fn users(&mut self) -> anyhow::Result<Vec<UserInfo>> {
        match self {
            Principals::Local(s) => Ok(s.user_infos()?),
            Principals::Remote(r) => Ok(r.request::<m::UsersList>(&m::Empty {})?.users),
        }
    }

    /// Disables (`disabled`) or enables a user; whether it changed anything.
    pub fn disable_user(&mut self, name: &str, disabled: bool) -> anyhow::Result<bool> {
        match self {
            Principals::Local(s) => Ok(s.disable_user(name, disabled)?),
            Principals::Remote(r) => {
                let p = m::UsersSetParams { name: name.into(), disabled: Some(disabled), admin: None };
                Ok(r.request::<m::UsersSet>(&p)?.changed)
            }
        }
    }

    /// Makes a user an admin or not; whether it changed anything.
    pub fn set_admin(&mut self, name: &str, admin: bool) -> anyhow::Result<bool> {
        match self {
            Principals::Local(s) => Ok(s.set_admin(name, admin)?),
            Principals::Remote(r) => {
                let p = m::UsersSetParams { name: name.into(), disabled: None, admin: Some(admin) };
                Ok(r.request::<m::UsersSet>(&p)?.changed)
            }
        }
    }

    /// Removes a user (with what they own when `purge`).
    pub fn remove_user(&mut self, name: &str, purge: bool) -> anyhow::Result<Removed> {
        match self {
            Principals::Local(s) => Ok(s.remove_user(name, purge)?),
            Principals::Remote(r) => {
                Ok(r.request::<m::UsersRemove>(&m::UsersRemoveParams { name: name.into(), purge })?)
            }
        }
    }

    /// Renames a user.
    pub fn rename_user(&mut self, old: &str, new: &str) -> anyhow::Result<()> {
        match self {
            Principals::Local(s) => Ok(s.rename_user(old, new)?),
            Principals::Remote(r) => {
                r.request::<m::UsersRename>(&m::UsersRenameParams { name: old.into(), new_name: new.into() })?;
                Ok(())
            }
        }
    }

    /// Makes a token (for the operator only when `operator`).
    pub fn create_token(
        &mut self,
        user: &str,
        read_only: bool,
        expires_at: Option<i64>,
        operator: bool,
    ) -> anyhow::Result<NewToken> {
        match self {
            Principals::Local(s) if operator && user.eq_ignore_ascii_case(seshat::store::LOCAL_USER) => {
                Ok(s.create_operator_token(read_only, expires_at)?)
            }
            Principals::Local(s) => Ok(s.create_token(user, read_only, expires_at)?),
            Principals::Remote(r) => {
                let p = m::TokensCreateParams { user: user.into(), read_only, expires_at, operator };
                Ok(r.request::<m::TokensCreate>(&p)?)
            }
        }
    }

    /// Revokes token `id` and makes a new one like it.
    pub fn rotate_token(&mut self, id: &str) -> anyhow::Result<NewToken> {
        match self {
            Principals::Local(s) => Ok(s.rotate_token(id)?),
            Principals::Remote(r) => Ok(r.request::<m::TokensRotate>(&m::TokenParams { id: id.into() })?),
        }
    }

    /// The tokens, of `user` or everyone.
    pub fn tokens(&mut self, user: Option<&str>) -> anyhow::Result<Vec<TokenInfo>> {
        match self {
            Principals::Local(s) => Ok(s.tokens(user)?),
            Principals::Remote(r) => {
                Ok(r.request::<m::TokensList>(&m::TokensListParams { user: user.map(str::to_string) })?.tokens)
            }
        }
    }

    /// Revokes token `id`; whether it was in force.
    pub fn revoke_token(&mut self, id: &str) -> anyhow::Result<bool> {
        match self {
            Principals::Local(s) => Ok(s.revoke_token(id)?),
            Principals::Remote(r) => Ok(r.request::<m::TokensRevoke>(&m::TokenParams { id: id.into() })?.changed),
        }
    }

    /// Makes a team scope.
    pub fn create_team(&mut self, team: &str) -> anyhow::Result<()> {
        match self {
            Principals::Local(s) => Ok(s.create_team(team)?),
            Principals::Remote(r) => {
                r.request::<m::ScopesCreate>(&m::ScopesCreateParams { team: team.into() })?;
                Ok(())
            }
        }
    }

    /// Grants `user` `access` to `team`.
    pub fn grant(&mut self, team: &str, user: &str, access: Access) -> anyhow::Result<()> {
        match self {
            Principals::Local(s) => Ok(s.grant(team, user, access)?),
            Principals::Remote(r) => {
                r.request::<m::ScopesGrant>(&m::ScopesGrantParams { team: team.into(), user: user.into(), access })?;
                Ok(())
            }
        }
    }

    /// Takes `user`'s access to `team` away; whether they had any.
    pub fn revoke(&mut self, team: &str, user: &str) -> anyhow::Result<bool> {
        match self {
            Principals::Local(s) => Ok(s.revoke(team, user)?),
            Principals::Remote(r) => Ok(r
                .request::<m::ScopesRevoke>(&m::ScopesRevokeParams { team: team.into(), user: user.into() })?
                .changed),
        }
    }

    /// Changes `team`'s review: whether it is required, whether a member reviews.
    pub fn set_review(
        &mut self,
        team: &str,
        required: Option<bool>,
        reviewer: Option<(&str, bool)>,
    ) -> anyhow::Result<()> {
        match self {
            Principals::Local(s) => Ok(s.set_review(team, required, reviewer)?),
            Principals::Remote(r) => {
                let params = m::ScopesReviewParams {
                    team: team.into(),
                    required,
                    user: reviewer.map(|r| r.0.to_string()),
                    reviewer: reviewer.map(|r| r.1),
                };
                r.request::<m::ScopesReview>(&params)?;
                Ok(())
            }
        }
    }

    /// The grants of the caller's teams.
    pub fn grants(&mut self) -> anyhow::Result<Vec<Grant>> {
        match self {
            Principals::Local(s) => Ok(s.grants()?),
            Principals::Remote(r) => Ok(r.request::<m::ScopesList>(&m::Empty {})?.grants),
        }
    }
}
