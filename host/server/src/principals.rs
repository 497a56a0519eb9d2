//! The admin methods: users, tokens and team grants over the service, each the store's own act
//! as the connection's user (the store checks who may: an admin, or a team's read-write member
//! for its grants).

use serde_json::Value;
use seshat::store::Store;
use seshat_protocol::methods::{self as m, ChangedResult, Empty, Request};

use crate::error::RpcError;
use crate::outbox as rpc;

/// Runs admin request `request` on `store` (acting for the connection's user).
pub(crate) fn call(store: &mut Store, request: Request) -> Result<Option<Value>, RpcError> {
    let failed = RpcError::from_store;
    match request {
        Request::UsersList(Empty {}) => {
            rpc::answer::<m::UsersList>(&m::UsersListResult { users: store.user_infos().map_err(failed)? })
        }
        Request::UsersAdd(p) => {
            store.add_user_as(&p.name, p.admin).map_err(failed)?;
            let user = store.user_infos().map_err(failed)?.into_iter().find(|u| u.name == p.name);
            let user = user.ok_or_else(|| RpcError::seshat("internal_error", "the user added is not listed"))?;
            rpc::answer::<m::UsersAdd>(&user)
        }
        Request::UsersSet(p) => {
            if p.disabled.is_none() && p.admin.is_none() {
                return Err(RpcError::invalid_params("`users/set` changes nothing: give `disabled` or `admin`"));
            }
            let mut changed = false;
            if let Some(disabled) = p.disabled {
                changed |= store.disable_user(&p.name, disabled).map_err(failed)?;
            }
            if let Some(admin) = p.admin {
                changed |= store.set_admin(&p.name, admin).map_err(failed)?;
            }
            rpc::answer::<m::UsersSet>(&ChangedResult { changed })
        }
        Request::UsersRename(p) => {
            store.rename_user(&p.name, &p.new_name).map_err(failed)?;
            rpc::answer::<m::UsersRename>(&Empty {})
        }
        Request::UsersRemove(p) => rpc::answer::<m::UsersRemove>(&store.remove_user(&p.name, p.purge).map_err(failed)?),
        Request::TokensList(p) => {
            let tokens = store.tokens(p.user.as_deref()).map_err(failed)?;
            rpc::answer::<m::TokensList>(&m::TokensListResult { tokens })
        }
        Request::TokensCreate(p) => {
            let made = if p.operator && p.user.eq_ignore_ascii_case(seshat::store::LOCAL_USER) {
                store.create_operator_token(p.read_only, p.expires_at)
            } else {
                store.create_token(&p.user, p.read_only, p.expires_at)
            };
            rpc::answer::<m::TokensCreate>(&made.map_err(failed)?)
        }
        Request::TokensRotate(p) => rpc::answer::<m::TokensRotate>(&store.rotate_token(&p.id).map_err(failed)?),
        Request::TokensRevoke(p) => {
            let changed = store.revoke_token(&p.id).map_err(failed)?;
            rpc::answer::<m::TokensRevoke>(&ChangedResult { changed })
        }
        Request::ScopesList(Empty {}) => {
            rpc::answer::<m::ScopesList>(&m::ScopesListResult { grants: store.grants().map_err(failed)? })
        }
        Request::ScopesCreate(p) => {
            store.create_team(&p.team).map_err(failed)?;
            rpc::answer::<m::ScopesCreate>(&Empty {})
        }
        Request::ScopesGrant(p) => {
            store.grant(&p.team, &p.user, p.access).map_err(failed)?;
            rpc::answer::<m::ScopesGrant>(&Empty {})
        }
        Request::ScopesRevoke(p) => {
            let changed = store.revoke(&p.team, &p.user).map_err(failed)?;
            rpc::answer::<m::ScopesRevoke>(&ChangedResult { changed })
        }
        Request::ScopesReview(p) => {
            let reviewer = match (&p.user, p.reviewer) {
                (Some(user), Some(on)) => Some((user.as_str(), on)),
                (None, None) => None,
                _ => {
                    return Err(RpcError::invalid_params(
                        "`user` and `reviewer` go together: name the member and say true or false",
                    ));
                }
            };
            if p.required.is_none() && reviewer.is_none() {
                return Err(RpcError::invalid_params("say what to change: `required`, or `user` with `reviewer`"));
            }
            store.set_review(&p.team, p.required, reviewer).map_err(failed)?;
            rpc::answer::<m::ScopesReview>(&Empty {})
        }
        other => Err(RpcError::method_not_found(other.name())),
    }
}
