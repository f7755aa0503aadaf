//! The account of writing arbor's native form. Its lines are the native
//! reader's own writer's (`load::arbor::write_tree`, which the facade
//! calls): the form holds every field of the model, so the only thing not
//! carried over is what the source's reader inferred (provenance), which
//! the form does not record.

use arbor_engine::model::Tree;

use super::account::{note_provenance, Account};

/// What the native form keeps.
pub const KEPT: &[&str] = &[
    "every tree, agent (parent, kind, end) and turn (start, duration, ttft, isl, osl, model, input kind, hash ids, text) to the nanosecond",
    "stated edges as stated; derived edges re-derived from the same times",
];

/// Notes what writing `tree` in the native form loses.
pub fn account(tree: &Tree, account: &mut Account) {
    note_provenance(account, tree);
}
