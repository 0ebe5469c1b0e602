"""The rewrite engine: the exact static-shape and sync-free forms behind the fixes of TPU101,
TPU103, TPU104 (host syncs in the step), TPU201 (data-dependent-shape ops) and TPU202
(boolean-mask selections). Every entry point returns a FixSpec, or None when no exact form
applies; the rules call them and know nothing of the pieces.

Entry points, one module per kind of rewrite:

    sync       item_fix, print_fix, if_fix    `.item()` -> `.detach()`, `print(t)` removed,
                                              `if t > c: x = f(x)` -> `torch.where`
    nonzero    shape_op_fix                   `len(m.nonzero())` -> `torch.count_nonzero(m)`, ...
    masked     read_fix, write_fix            `x[m].sum()` -> `torch.where(m, x, 0).sum()`,
                                              `x[m] = v` -> `x.masked_fill_(m, v)`
    bound      bound_fix                      `y = y[m]` then only reduced later (via masked)
    deferral   defer                          `self.losses.append(loss.item())` and its
                                              epoch-end readers, across files: the values
                                              stay on the device, read once at the end

The pieces, in the order a TPU202 rewrite goes through them (the others use the subset they
need: sync uses flow, shapes, purity and expressions; nonzero uses expressions):

    1. regions      the selection `x[m]` and the largest elementwise expression around it
    2. flow         a local followed through its function (where bound, read later), for bound
    3. shapes       which expressions provably have the same shape as the selected tensor
    4. purity       whether an expression may be evaluated twice, or where it was not
    5. consumers    what consumes the selection whole: a reduction, or a loss (losses)
    6. masks        how the mask is written (widened where its shape is not provable)
    7. expressions  the replacement: a template filled with the user's source, parsed back

The deferral works on `ast` trees of every file that touches the container (found by the
project model, tpulint.analysis.containers) and gives its fix as text edits across files.

Helpers shared with the rules themselves (local bindings, mask and tensor matchers) are in
`tpulint.rules.shared.tensors`.
"""
