"""CheckoutFacts: the other checkout of `--against`, as a result keeps it."""

from __future__ import annotations

from topos_cli.result.result_part import ResultPart


class CheckoutFacts(ResultPart, forbid_unknown_fields=False):
    """`--against` as typed, the checkout's directory and commit, whether it was a
    temporary worktree of a git ref, the label its routes carry (`route@against`), the
    project it is a checkout of, and whether its workers ran its own topos."""

    requested: str | None = None
    path: str | None = None
    commit: str | None = None
    temporary_worktree: bool | None = None
    label: str | None = None
    project: str | None = None
    own_topos: bool | None = None
