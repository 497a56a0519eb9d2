// The provider calls 0.3.0 added (the token counters), for every version that has them;
// included into a `translate` module beside `translate.rs`.

/// `counters`: (name, request) pairs, in order.
pub(crate) fn counters(
    b: &Bindings,
    s: &mut Store<State<()>>,
    request: &ChatRequest,
    messages: &[PluginMessage],
) -> Call<Vec<(String, RawRequest)>> {
    let messages: Vec<_> = messages.iter().map(Into::into).collect();
    let counters = b.seshat_plugin_translate().call_counters(s, &chat_request(request), &messages)?;
    Ok(Ok(counters.into_iter().map(|p| (p.name, raw_request(p.request))).collect()))
}

/// `parse-count`.
pub(crate) fn parse_count(
    b: &Bindings,
    s: &mut Store<State<()>>,
    name: &str,
    status: u16,
    body: &[u8],
) -> Call<Option<u64>> {
    b.seshat_plugin_translate().call_parse_count(s, name, status, body).map(Ok)
}
