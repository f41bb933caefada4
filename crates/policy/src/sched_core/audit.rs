//! Every decision the core makes, checked against the shared invariants ([`crate::testkit`])
//! while a frontend's tests run it: the checkers see the very state, hints and answers the
//! core decided with, in batches as the frontend hands them over, which a check from outside
//! the core cannot see (the state moves with every placement of a batch).

use super::{SchedCore, TaskId};
use crate::idle_order::{Placement, TaskHints};
use crate::migration::SliceEnd;
use crate::placement_policy::PlacementPolicy;
use crate::testkit::{Violation, check_placement, check_slice_end, check_state};

/// What an audit has checked, and the first decision that broke a rule.
#[derive(Clone, Debug, Default)]
pub struct Audit {
    /// Wake-up placements checked.
    pub wakeups: u64,
    /// Slice-end answers checked.
    pub slice_ends: u64,
    /// The first violation: the task and the rule it broke.
    pub first_violation: Option<(TaskId, Violation)>,
}

impl Audit {
    /// Keeps the first violation.
    fn record(&mut self, task: TaskId, checked: Result<(), Violation>) {
        if let Err(v) = checked {
            self.first_violation.get_or_insert((task, v));
        }
    }
}

impl<S, P: PlacementPolicy> SchedCore<S, P> {
    /// From now on, checks every wake-up placement and slice-end answer of a hybridland
    /// policy (the checkers state hybridland's rules; other policies are not checked) against
    /// the shared invariants, as [`audit`](Self::audit) reports. A test instrument: it
    /// allocates on a violation and costs a recomputation per decision.
    pub fn start_audit(&mut self) {
        self.audit = Some(Audit::default());
    }

    /// What the audit has seen, if one was started.
    pub fn audit(&self) -> Option<&Audit> {
        self.audit.as_ref()
    }

    pub(super) fn audit_wakeup(&mut self, task: TaskId, hints: &TaskHints<'_>, answer: &Placement) {
        let (Some(audit), Some(policy)) = (self.audit.as_mut(), self.policy.hybridland()) else {
            return;
        };
        audit.wakeups += 1;
        audit.record(
            task,
            check_state(&self.topo, &self.state)
                .and_then(|()| check_placement(&self.topo, policy, &self.state, hints, answer)),
        );
    }

    /// `contended` as the core counted it; the state has the task still on its CPU.
    pub(super) fn audit_slice_end(
        &mut self,
        task: TaskId,
        hints: &TaskHints<'_>,
        contended: bool,
        answer: SliceEnd,
    ) {
        let (Some(audit), Some(policy)) = (self.audit.as_mut(), self.policy.hybridland()) else {
            return;
        };
        audit.slice_ends += 1;
        audit.record(
            task,
            check_state(&self.topo, &self.state).and_then(|()| {
                check_slice_end(&self.topo, policy, &self.state, hints, contended, answer)
            }),
        );
    }
}
