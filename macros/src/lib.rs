//! # flightrec-macros
//!
//! The `#[instrument]` attribute of flightrec. Use it through the `flightrec`
//! crate (`#[flightrec::instrument]`), which re-exports it and holds what the
//! expansion calls: on std programs the XRay FDR runtime (and optionally a Trace2
//! region), on `#![no_std]` firmware a name static in the `.flightrec` ELF
//! section and a call to the program's global recorder.
//!
//! The attribute reads the function's tokens with `proc_macro` alone: no `syn`,
//! `quote` or `proc-macro2`, so it costs a build one small crate.
//!
//! What the expansion looks like (the `flightrec` crate documents the behaviour):
//!
//! ```text
//! #[flightrec::instrument]               fn parse(x: u32) -> u32 {
//! fn parse(x: u32) -> u32 {                  let __flightrec_fn = ::flightrec::__instrument_fn!("parse", ".flightrec.fn.<hash>");
//!     body                    ==>            body
//! }                                      }
//! ```
//!
//! An `async fn` gets its body wrapped in a future that enters and exits the
//! function around each poll.
#![warn(missing_docs)]

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use std::sync::atomic::{AtomicU64, Ordering};

/// Records the entry and exit of a function (FDR function records; see the
/// `flightrec` crate's documentation of `instrument` for examples).
///
/// * `#[flightrec::instrument]`: enter and exit, covering early returns, `?` and
///   unwinding panics. An `async fn` is entered and exited around each poll.
/// * `#[flightrec::instrument(region = "category")]`: also a Trace2 region
///   (category as given, the function's name as label) on std programs.
///
/// Works on free functions, methods, generic functions, `unsafe fn`, `extern`
/// functions, functions returning `impl Trait` and interrupt handlers (put it
/// above cortex-m-rt's `#[interrupt]` or `#[exception]`). Refused with a compile
/// error: `const fn`, functions without a body, and anything that is not a
/// function.
#[proc_macro_attribute]
pub fn instrument(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr, item.clone()) {
        Ok(ts) => ts,
        Err((span, msg)) => {
            // The item stays, so that its uses report no further errors.
            let mut out = compile_error(span, &msg);
            out.extend(item);
            out
        }
    }
}

type Error = (Span, String);

/// The options of the attribute.
struct Options {
    /// `region = "category"`.
    region: Option<Literal>,
}

fn parse_options(attr: TokenStream) -> Result<Options, Error> {
    let mut opts = Options { region: None };
    let tokens: Vec<TokenTree> = attr.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        let key = match &tokens[i] {
            TokenTree::Ident(id) => id.clone(),
            other => return Err((other.span(), "expected `region = \"category\"`".to_string())),
        };
        if key.to_string() != "region" {
            return Err((
                key.span(),
                format!(
                    "unknown option `{key}`: #[flightrec::instrument] takes `region = \"category\"`"
                ),
            ));
        }
        match tokens.get(i + 1) {
            Some(TokenTree::Punct(p)) if p.as_char() == '=' => {}
            _ => return Err((key.span(), "expected `region = \"category\"`".to_string())),
        }
        let value = match tokens.get(i + 2) {
            Some(TokenTree::Literal(l)) if l.to_string().starts_with('"') => l.clone(),
            Some(other) => {
                return Err((
                    other.span(),
                    "the region's category is a string literal".to_string(),
                ))
            }
            None => return Err((key.span(), "expected `region = \"category\"`".to_string())),
        };
        if opts.region.replace(value).is_some() {
            return Err((key.span(), "`region` given twice".to_string()));
        }
        i += 3;
        match tokens.get(i) {
            None => {}
            Some(TokenTree::Punct(p)) if p.as_char() == ',' => i += 1,
            Some(other) => return Err((other.span(), "expected `,`".to_string())),
        }
    }
    Ok(opts)
}

/// A function split where the expansion needs it.
struct Function {
    /// Attributes, visibility, qualifiers, `fn`, name, generics, arguments,
    /// return type and where clause: everything before the body, unchanged.
    head: Vec<TokenTree>,
    name: Ident,
    is_async: bool,
    /// The return type's tokens (empty for `()`).
    ret: Vec<TokenTree>,
    body: Group,
}

fn is_ident(t: &TokenTree, s: &str) -> bool {
    matches!(t, TokenTree::Ident(i) if i.to_string() == s)
}

fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

fn parse_function(item: TokenStream) -> Result<Function, Error> {
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    let mut i = 0;
    let mut is_async = false;
    // Attributes, visibility and qualifiers up to `fn`.
    loop {
        let Some(t) = tokens.get(i) else {
            return Err((
                Span::call_site(),
                "#[flightrec::instrument] goes on a function".to_string(),
            ));
        };
        match t {
            TokenTree::Punct(p) if p.as_char() == '#' => i += 2, // `#` `[...]`
            TokenTree::Ident(id) => match id.to_string().as_str() {
                "fn" => break,
                "pub" | "unsafe" | "extern" | "default" | "safe" => i += 1,
                "async" => {
                    is_async = true;
                    i += 1;
                }
                "const" => {
                    return Err((
                        id.span(),
                        "#[flightrec::instrument] cannot instrument a `const fn`: recording \
                         is a run-time effect"
                            .to_string(),
                    ))
                }
                other => {
                    return Err((
                        id.span(),
                        format!(
                            "#[flightrec::instrument] goes on a function, not on `{other}` items"
                        ),
                    ))
                }
            },
            // `pub(crate)`, `extern "C"`.
            TokenTree::Group(_) | TokenTree::Literal(_) => i += 1,
            TokenTree::Punct(p) => {
                return Err((
                    p.span(),
                    "#[flightrec::instrument] goes on a function".to_string(),
                ))
            }
        }
    }
    let fn_at = i;
    let name = match tokens.get(fn_at + 1) {
        Some(TokenTree::Ident(id)) => id.clone(),
        _ => {
            return Err((
                tokens[fn_at].span(),
                "expected the function's name".to_string(),
            ))
        }
    };
    let body = match tokens.last() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => g.clone(),
        Some(t) => {
            return Err((
                t.span(),
                format!(
                    "#[flightrec::instrument] needs a function body: `{name}` has none (put the \
                     attribute on the trait's implementations)"
                ),
            ))
        }
        None => unreachable!("the name was found"),
    };
    let head: Vec<TokenTree> = tokens[..tokens.len() - 1].to_vec();
    // The return type: after the argument list's `->`, up to `where` or the body.
    let mut j = fn_at + 2;
    if tokens.get(j).is_some_and(|t| is_punct(t, '<')) {
        let mut depth = 0i32;
        while j < head.len() {
            let t = &head[j];
            if is_punct(t, '-') && head.get(j + 1).is_some_and(|n| is_punct(n, '>')) {
                j += 2; // an arrow inside `Fn(A) -> B`
                continue;
            }
            if is_punct(t, '<') {
                depth += 1;
            } else if is_punct(t, '>') {
                depth -= 1;
            }
            j += 1;
            if depth == 0 {
                break;
            }
        }
    }
    // `j` is at the argument list.
    j += 1;
    let mut ret = Vec::new();
    if head.get(j).is_some_and(|t| is_punct(t, '-'))
        && head.get(j + 1).is_some_and(|t| is_punct(t, '>'))
    {
        ret = head[j + 2..]
            .iter()
            .take_while(|t| !is_ident(t, "where"))
            .cloned()
            .collect();
    }
    Ok(Function {
        head,
        name,
        is_async,
        ret,
        body,
    })
}

/// Parses `src` (text the expansion writes, with call-site spans).
fn ts(src: &str) -> TokenStream {
    src.parse().expect("the expansion's own text parses")
}

/// A per-expansion unique suffix for the name static's section (FNV-1a of the
/// function's name, its tokens and a counter).
fn unique(f: &Function) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let text = format!("{}{:?}{}{n}", f.name, f.body.span(), f.body);
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn expand(attr: TokenStream, item: TokenStream) -> Result<TokenStream, Error> {
    let opts = parse_options(attr)?;
    let f = parse_function(item)?;
    let name = f.name.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    let section = format!(".flightrec.fn.{}", unique(&f));
    let guard = format!("::flightrec::__instrument_fn!({name:?}, {section:?})");
    let region = opts
        .region
        .as_ref()
        .map(|cat| format!("::flightrec::__instrument_region!({cat}, {name:?})"));

    // Inner attributes and cortex-m-rt's `static mut` resources stay first.
    let body: Vec<TokenTree> = f.body.stream().into_iter().collect();
    let mut k = 0;
    loop {
        if body.get(k).is_some_and(|t| is_punct(t, '#'))
            && body.get(k + 1).is_some_and(|t| is_punct(t, '!'))
        {
            k += 3;
        } else if !f.is_async
            && body.get(k).is_some_and(|t| is_ident(t, "static"))
            && body.get(k + 1).is_some_and(|t| is_ident(t, "mut"))
        {
            while k < body.len() && !is_punct(&body[k], ';') {
                k += 1;
            }
            k += 1;
        } else {
            break;
        }
    }
    let k = k.min(body.len());
    let (lead, rest) = body.split_at(k);
    let rest: TokenStream = rest.iter().cloned().collect();

    let mut new_body: TokenStream = lead.iter().cloned().collect();
    if f.is_async {
        let guards = match &region {
            Some(r) => format!(
                "|| {{ let __flightrec_fn = {guard}; let __flightrec_region = {r}; \
                 (__flightrec_region, __flightrec_fn) }}"
            ),
            None => format!("|| ({guard},)"),
        };
        // `?` in the body needs the block's type; a return type with `impl Trait`
        // cannot be written in a `let`, and then inference does without.
        let hint = if f.ret.iter().any(|t| is_ident(t, "impl")) {
            TokenStream::new()
        } else {
            let mut check = ts("let __flightrec_ret:");
            if f.ret.is_empty() {
                check.extend(ts("()"));
            } else {
                check.extend(f.ret.iter().cloned());
            }
            check.extend(ts("= loop {}; return __flightrec_ret;"));
            let mut hint = ts(
                "#[allow(unreachable_code, clippy::diverging_sub_expression, \
                 clippy::let_unit_value, clippy::empty_loop, clippy::needless_return)] \
                 if false",
            );
            hint.extend([TokenTree::Group(Group::new(Delimiter::Brace, check))]);
            hint
        };
        let mut inner = hint;
        inner.extend(rest);
        let mut block = ts("async move");
        block.extend([TokenTree::Group(Group::new(Delimiter::Brace, inner))]);
        let mut call = ts("::flightrec::__private::PerPoll::new");
        let mut args = block;
        args.extend(ts(&format!(", {guards}")));
        call.extend([TokenTree::Group(Group::new(Delimiter::Parenthesis, args))]);
        call.extend(ts(".await"));
        new_body.extend(call);
    } else {
        new_body.extend(ts(&format!("let __flightrec_fn = {guard};")));
        if let Some(r) = &region {
            new_body.extend(ts(&format!("let __flightrec_region = {r};")));
        }
        new_body.extend(rest);
    }
    let mut body = Group::new(Delimiter::Brace, new_body);
    body.set_span(f.body.span());
    let mut out: TokenStream = f.head.into_iter().collect();
    out.extend([TokenTree::Group(body)]);
    Ok(out)
}

/// `compile_error!("msg")` pointing at `span`.
fn compile_error(span: Span, msg: &str) -> TokenStream {
    let mut lit = Literal::string(msg);
    lit.set_span(span);
    let mut bang = Punct::new('!', Spacing::Alone);
    bang.set_span(span);
    let mut args = Group::new(Delimiter::Parenthesis, TokenTree::Literal(lit).into());
    args.set_span(span);
    let mut semi = Punct::new(';', Spacing::Alone);
    semi.set_span(span);
    [
        TokenTree::Ident(Ident::new("compile_error", span)),
        TokenTree::Punct(bang),
        TokenTree::Group(args),
        TokenTree::Punct(semi),
    ]
    .into_iter()
    .collect()
}
