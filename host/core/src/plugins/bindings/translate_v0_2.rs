// The provider calls 0.2.0 added (probes and refusal limits), in host types. `include!`d after
// `translate.rs` into each version's bindings module from 0.2.0 on: the records are the same in
// every version, so one text serves them all.

use crate::plugins::provider::{Discovery, Limit};

/// `probes`: (name, request) pairs, in order.
pub(crate) fn probes(
    b: &Bindings,
    s: &mut Store<State<()>>,
    model: Option<&str>,
    base_url: &str,
) -> Call<Vec<(String, RawRequest)>> {
    let probes = b.seshat_plugin_translate().call_probes(s, model, base_url)?;
    Ok(Ok(probes.into_iter().map(|p| (p.name, raw_request(p.request))).collect()))
}

/// `parse-probe`.
pub(crate) fn parse_probe(
    b: &Bindings,
    s: &mut Store<State<()>>,
    name: &str,
    model: Option<&str>,
    status: u16,
    body: &[u8],
) -> Call<Discovery> {
    let d = b.seshat_plugin_translate().call_parse_probe(s, name, model, status, body)?;
    Ok(Ok(Discovery { context_window: d.context_window, max_output_tokens: d.max_output_tokens, models: d.models }))
}

/// `refusal-limit`.
pub(crate) fn refusal_limit(
    b: &Bindings,
    s: &mut Store<State<()>>,
    status: u16,
    body: &[u8],
) -> Call<Option<Limit>> {
    let limit = b.seshat_plugin_translate().call_refusal_limit(s, status, body)?;
    Ok(Ok(limit.map(|l| match l {
        t::Limit::TooLong(t) => Limit::TooLong { window: t.window, requested: t.requested },
        t::Limit::InputAndOutput(io) => {
            Limit::InputAndOutput { input: io.input, max_tokens: io.max_tokens, window: io.window }
        }
        t::Limit::MaxOutput(n) => Limit::MaxOutput(n),
    })))
}
