//! Rules for `#[handoff]` payloads (guarantee 1): every contract part is
//! present exactly once and none can be dropped on the wire.

use crate::ctxt::Ctxt;
use crate::model::handoff::{
    CONTAINER_SERDE_ALLOWED, DROPPING, FIELD_SCHEMARS_ALLOWED, Handoff, PART_SERDE_ALLOWED, PARTS,
    cfg_attr_hides_options, for_each_serde_key, is_cfg, is_option,
};

/// How the `#[contract]` field is named in messages.
const CONTRACT: &str = "contract field `#[contract]`";

/// Runs every contract rule.
pub fn check(cx: &Ctxt, h: &Handoff) {
    check_bare_markers(cx, h);
    check_contract_field(cx, h);
    check_missing_parts(cx, h);
    check_duplicate_parts(cx, h);
    check_one_part_per_field(cx, h);
    check_droppable_parts(cx, h);
    check_fields(cx, h);
    check_container(cx, h);
}

/// Every field, part or not, is read and written as declared: the record
/// shows everything the receiver gets, and a missing field is an error. So
/// no serde option but `rename`/`alias` (`skip`, `default`, `with`, ...), no
/// schemars option but documentation, no `cfg`, no `cfg_attr` hiding
/// options. (A part with a dropping option gets the more specific message.)
fn check_fields(cx: &Ctxt, h: &Handoff) {
    let syn::Fields::Named(named) = &h.item.fields else {
        return;
    };
    for field in &named.named {
        let part = h
            .parts
            .iter()
            .find(|p| Some(&p.field) == field.ident.as_ref());
        let name = field
            .ident
            .as_ref()
            .map(|i| i.to_string())
            .unwrap_or_default();
        let contract = h
            .contracts
            .iter()
            .any(|c| Some(&c.field) == field.ident.as_ref());
        let what = match part {
            Some(p) => format!("contract part `#[{}]`", PARTS[p.part].marker),
            None if contract => CONTRACT.to_owned(),
            None => format!("handoff field `{name}`"),
        };
        // What a dropping serde option is reported as: a part, or the
        // `#[contract]` field that holds them all.
        let dropped = match part {
            Some(p) => Some(format!("contract part `#[{}]`", PARTS[p.part].marker)),
            None if contract => Some("the `#[contract]` field (every part)".to_owned()),
            None => None,
        };
        for attr in &field.attrs {
            if attr.path().is_ident("serde") {
                for_each_serde_key(attr, |key| {
                    let dropping = DROPPING.iter().find(|d| key.is_ident(d));
                    if let (Some(dropped), Some(name)) = (&dropped, dropping) {
                        cx.error_spanned_by(
                            key,
                            format!(
                                "`#[serde({name})]` lets {dropped} be dropped on the wire; remove it: a missing part must be rejected, never defaulted"
                            ),
                        );
                    } else if !PART_SERDE_ALLOWED.iter().any(|k| key.is_ident(k)) {
                        let option = quote::ToTokens::to_token_stream(key)
                            .to_string()
                            .replace(' ', "");
                        cx.error_spanned_by(
                            key,
                            format!(
                                "`#[serde({option})]` is not allowed on {what}: the record must show everything the receiver gets and a missing field must be an error; only `rename` and `alias` are allowed"
                            ),
                        );
                    }
                });
            }
            if attr.path().is_ident("schemars") {
                for_each_serde_key(attr, |key| {
                    if !FIELD_SCHEMARS_ALLOWED.iter().any(|k| key.is_ident(k)) {
                        let option = quote::ToTokens::to_token_stream(key)
                            .to_string()
                            .replace(' ', "");
                        cx.error_spanned_by(
                            key,
                            format!(
                                "`#[schemars({option})]` is not allowed on {what}: the published schema must describe the field exactly as it is read; only `title`, `description`, `example` and `deprecated` are allowed"
                            ),
                        );
                    }
                });
            }
            if is_cfg(attr) {
                cx.error_spanned_by(
                    attr,
                    format!("`#[cfg(..)]` is not allowed on {what}: a field that may not exist cannot be part of a published contract; make the field always present"),
                );
            }
            if cfg_attr_hides_options(attr) {
                cx.error_spanned_by(
                    attr,
                    format!("`cfg_attr` cannot carry serde or schemars options on {what}: the contract rules could not see them; write the options plainly"),
                );
            }
        }
    }
}

/// A part marker is a bare attribute: `#[stop]`, not `#[stop(..)]`.
fn check_bare_markers(cx: &Ctxt, h: &Handoff) {
    for (part, attr) in &h.marker_args {
        cx.error_spanned_by(
            attr,
            format!("`#[{}]` takes no arguments", PARTS[*part].marker),
        );
    }
}

/// The short form: one `#[contract]` field holds the five parts, so it is
/// the only contract field. A second `#[contract]`, a part marked beside it
/// (on its own field or on the same one), arguments, or an `Option` are
/// reported where they are written.
fn check_contract_field(cx: &Ctxt, h: &Handoff) {
    for attr in &h.contract_args {
        cx.error_spanned_by(attr, "`#[contract]` takes no arguments");
    }
    let Some(first) = h.contracts.first() else {
        return;
    };
    for again in &h.contracts[1..] {
        let message = if again.field == first.field {
            format!(
                "`#[contract]` is written twice on `{}`; remove the second mark",
                again.field
            )
        } else {
            format!(
                "`#[contract]` is marked twice, on `{}` and `{}`; one field holds the contract: keep one mark",
                first.field, again.field
            )
        };
        cx.error_spanned_by(&again.marker, message);
    }
    for part in &h.parts {
        let marker = PARTS[part.part].marker;
        let message = if h.contracts.iter().any(|c| c.field == part.field) {
            format!(
                "`{}` is marked both `#[contract]` and `#[{marker}]`; the `#[contract]` field holds every part: remove `#[{marker}]`",
                part.field
            )
        } else {
            format!(
                "`#[{marker}]` is already held by the `#[contract]` field `{}` (its `{}`); remove `#[{marker}]` and its field, or write every part as its own field without `#[contract]`",
                first.field,
                crate::model::handoff::CONTRACT_FIELDS[part.part]
            )
        };
        cx.error_spanned_by(&part.marker, message);
    }
    if let Some(c) = h.contract_field()
        && is_option(&c.ty)
    {
        cx.error_spanned_by(
            &c.ty,
            "the `#[contract]` field can be absent: serde reads a missing `Option` field as `None`; use `Contract<authority::Name>`",
        );
    }
}

/// A handoff without one of the parts is rejected, naming the part (a
/// `#[contract]` field holds them all).
fn check_missing_parts(cx: &Ctxt, h: &Handoff) {
    if !h.contracts.is_empty() {
        return;
    }
    for (i, part) in PARTS.iter().enumerate() {
        if !h.parts.iter().any(|p| p.part == i) {
            cx.error_spanned_by(
                &h.item.ident,
                format!(
                    "handoff `{}` is missing its `#[{}]` part ({}); add a field such as `{}`",
                    h.item.ident, part.marker, part.meaning, part.example
                ),
            );
        }
    }
}

/// A part marked on two fields is ambiguous: the error is on the second.
/// (A field marked twice is `check_one_part_per_field`'s.)
fn check_duplicate_parts(cx: &Ctxt, h: &Handoff) {
    for (i, part) in PARTS.iter().enumerate() {
        let mut marked = h.counted_parts().filter(|p| p.part == i);
        if let Some(first) = marked.next() {
            for again in marked {
                cx.error_spanned_by(
                    &again.marker,
                    format!(
                        "`#[{}]` is marked twice, on `{}` and `{}`; a contract part is one field: keep one mark",
                        part.marker, first.field, again.field
                    ),
                );
            }
        }
    }
}

/// One field, one contract part: a field with two part marks would merge
/// two parts into one value (an `#[evidence]` list that is also the
/// `#[uncertainty]` list). The error is on the second mark, and says so
/// before any type error could speak about the field's type.
fn check_one_part_per_field(cx: &Ctxt, h: &Handoff) {
    for (i, again) in h.parts.iter().enumerate() {
        if !h.is_second_mark(i) {
            continue;
        }
        let Some(first) = h.parts[..i].iter().find(|p| p.field == again.field) else {
            continue;
        };
        let (first_marker, marker) = (PARTS[first.part].marker, PARTS[again.part].marker);
        let message = if first.part == again.part {
            format!(
                "`#[{marker}]` is written twice on `{}`; one field, one contract part: remove the second mark",
                again.field
            )
        } else {
            format!(
                "`{}` is marked both `#[{first_marker}]` and `#[{marker}]`; one field, one contract part: give `#[{marker}]` a field of its own (such as `{}`)",
                again.field, PARTS[again.part].example
            )
        };
        cx.error_spanned_by(&again.marker, message);
    }
}

/// A part that can be absent on the wire (an `Option`, or a serde option
/// that defaults, skips or flattens it) is rejected: a dropped part must be
/// a deserialization error, never a default.
fn check_droppable_parts(cx: &Ctxt, h: &Handoff) {
    for p in h.counted_parts() {
        let marker = PARTS[p.part].marker;
        if is_option(&p.ty) {
            cx.error_spanned_by(
                &p.ty,
                format!(
                    "contract part `#[{marker}]` can be absent: serde reads a missing `Option` field as `None`; use a required type (for \"nothing\", send an empty list)"
                ),
            );
        }
    }
}

/// Container-level rules: no `#[serde(default)]`, no own serde/schemars
/// derives (the macro derives them with the right settings), no generics.
fn check_container(cx: &Ctxt, h: &Handoff) {
    for attr in &h.item.attrs {
        if attr.path().is_ident("serde") {
            for_each_serde_key(attr, |key| {
                if key.is_ident("default") {
                    cx.error_spanned_by(
                        key,
                        "`#[serde(default)]` on a handoff lets every contract part be dropped on the wire; remove it",
                    );
                } else if !CONTAINER_SERDE_ALLOWED.iter().any(|k| key.is_ident(k)) {
                    let name = quote::ToTokens::to_token_stream(key)
                        .to_string()
                        .replace(' ', "");
                    cx.error_spanned_by(
                        key,
                        format!(
                            "`#[serde({name})]` is not allowed on a handoff: it could change what is read or written past the contract rules; remove it (allowed: `rename`, `rename_all`, `deny_unknown_fields`, `expecting`, `bound`)"
                        ),
                    );
                }
            });
        }
        if cfg_attr_hides_options(attr) {
            cx.error_spanned_by(
                attr,
                "`cfg_attr` cannot carry serde or schemars options on a handoff: the contract rules could not see them; write the options plainly",
            );
        }
        if attr.path().is_ident("derive") {
            let _ = attr.parse_nested_meta(|meta| {
                let last = meta.path.segments.last().map(|s| s.ident.to_string());
                if let Some(name) = last
                    && ["Serialize", "Deserialize", "JsonSchema"].contains(&name.as_str())
                {
                    cx.error_spanned_by(
                        &meta.path,
                        format!("`#[handoff]` derives `{name}` itself (with unknown fields denied); remove it from `#[derive(..)]`"),
                    );
                }
                Ok(())
            });
        }
    }
    if !h.item.generics.params.is_empty() {
        cx.error_spanned_by(
            &h.item.generics,
            "a handoff cannot be generic: its published schema names one concrete type; use a concrete type",
        );
    }
}
