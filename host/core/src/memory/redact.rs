//! What of a write reaches memory: credentials replaced by placeholders in the caller's own
//! scopes, refused outright in a team's (which every member reads).

use std::borrow::Cow;

use super::{Error, Memory, Place, Result};
use crate::store::Redacting;
use crate::store::db::Db;

impl Memory<'_> {
    /// `texts` as they are to be stored in `place`: redacted in the caller's own scopes; in a
    /// team scope, a text holding a credential refuses the whole write.
    pub(super) fn clean<'t>(&self, place: &Place, texts: &'t [String]) -> Result<Cow<'t, [String]>> {
        clean_in(self.db, self.redacting, place, texts)
    }

    /// [`Memory::clean`] of one text.
    pub(super) fn clean_one<'t>(&self, place: &Place, text: &'t str) -> Result<Cow<'t, str>> {
        let one = [text.to_string()];
        match self.clean(place, &one)? {
            Cow::Owned(mut v) => Ok(Cow::Owned(v.remove(0))),
            Cow::Borrowed(_) => Ok(Cow::Borrowed(text)),
        }
    }
}

/// [`Memory::clean`] with the connection and settings given apart (inside a transaction).
pub(super) fn clean_in<'t>(
    db: &Db,
    redacting: Redacting<'_>,
    place: &Place,
    texts: &'t [String],
) -> Result<Cow<'t, [String]>> {
    let team = place.scope.team().is_some();
    // A team is no project: its texts are always judged.
    // The user and cross scopes are read from every project: judged as no project's (a project
    // redaction is off for does not let its credentials into them).
    let project = if team { "" } else { place.project.as_str() };
    let Some(scrub) = redacting.scrub(db, project)? else { return Ok(Cow::Borrowed(texts)) };
    if team {
        for text in texts {
            if let Some(found) = scrub.find(text).into_iter().next() {
                return Err(Error::Database(crate::store::Error::CredentialRefused {
                    scope: place.scope.to_string(),
                    rule: found.rule,
                }));
            }
        }
        return Ok(Cow::Borrowed(texts));
    }
    let mut out: Option<Vec<String>> = None;
    for (i, text) in texts.iter().enumerate() {
        match scrub.text(text) {
            Cow::Owned(t) => out.get_or_insert_with(|| texts[..i].to_vec()).push(t),
            Cow::Borrowed(t) => {
                if let Some(o) = out.as_mut() {
                    o.push(t.to_string());
                }
            }
        }
    }
    Ok(out.map_or(Cow::Borrowed(texts), Cow::Owned))
}
