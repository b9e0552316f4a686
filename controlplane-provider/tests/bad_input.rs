//! Bad input stopped at the door, as a table: every row is an object a user could write, run
//! through the very admission functions the two webhooks serve; each must be refused, and the
//! message it gets is what `docs/bad-input.md` shows. Its first section is generated from these
//! rows (`make generate`, or `CAPOA_UPDATE_DOCS=1 cargo test -p controlplane-provider --test
//! bad_input`), and this test fails when it no longer matches; the second section, what the
//! controllers say, is `tests/agent-sim/tests/bad_input_controllers.rs`'s (see `bad_input/doc.rs`).
//! The rows live in `bad_input/rows.rs`, shared with `tests/agent-sim/tests/bad_input.rs`, which
//! sends each through the real kube-apiserver with our webhooks installed.

#[path = "bad_input/doc.rs"]
mod doc;
#[path = "bad_input/rows.rs"]
mod rows;

use rows::{Row, config, control_plane, review, rows};
use serde_json::json;

fn table() -> String {
    let mut out = String::from(
        "# Bad input: what each gets at admission\n\n\
         Generated from `controlplane-provider/tests/bad_input.rs` (`make generate`): each row is\n\
         an object written with that one mistake, run through the admission function the\n\
         control-plane or bootstrap webhook serves; the message is exactly what `kubectl apply`\n\
         shows (after `admission webhook \"…\" denied the request:`). Every row is also sent\n\
         through the real kube-apiserver, with our CRDs and both validating webhooks installed as\n\
         the releases install them (`tests/agent-sim/tests/bad_input.rs`), and is refused there\n\
         with this message. Nothing is stored: the object is refused as a whole. What only the\n\
         controllers can know (a pull secret that does not exist or is of the wrong shape, a\n\
         machine template that does not exist, a discovery image that cannot be built) is a\n\
         condition on the control plane instead: see [What the controllers\n\
         say](#what-the-controllers-say) below.\n\n\
         | Input | Kind | Refused with |\n| --- | --- | --- |\n",
    );
    for row in rows() {
        let kind = row.object["kind"].as_str().unwrap_or_default();
        let kind = if row.old.is_some() {
            format!("{kind} (update)")
        } else {
            kind.to_string()
        };
        let message = review(&row).expect_err(row.what).to_string();
        out.push_str(&format!(
            "| {} | {kind} | {} |\n",
            row.what,
            message.replace('|', "\\|")
        ));
    }
    out
}

#[test]
fn every_bad_input_is_refused_and_the_doc_says_how() {
    doc::ADMISSION.write_or_check(
        &doc::path(env!("CARGO_MANIFEST_DIR"), 1),
        &table(),
        "CAPOA_UPDATE_DOCS=1 cargo test -p controlplane-provider --test bad_input",
    );
}

#[test]
fn the_rows_pass_once_their_mistake_is_taken_out() {
    // The base objects are fine: each row is refused for its own mistake only.
    for object in [control_plane(json!({})), config(json!({}))] {
        let row = Row {
            what: "the base object",
            object,
            old: None,
        };
        assert_eq!(review(&row), Ok(Vec::new()));
    }
}
