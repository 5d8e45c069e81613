"""Module forwards: root-forward facts, parameters used, graphs entering modules, BatchNorm buffers
written outside the forward, and forwards outside the training step (gradients off, train mode)
that move BatchNorm running statistics, at the forward's call.
"""

from __future__ import annotations

import sys

MAX_HELD_OUTPUTS = 256  # module outputs of a step kept to name the first non-finite one


def install(rec, torch) -> None:
    nn = torch.nn
    guarded = rec.guarded
    tls = rec.tls
    bn_cls = nn.modules.batchnorm._BatchNorm

    @guarded
    def pre(module, args):
        depth = tls.depth
        tls.depth = depth + 1
        if tls.untraced is None and rec.tracing and not rec.quiet:
            if rec.library_only(module):
                if rec.suspend_tracing():
                    tls.untraced = module
            else:
                rec.resume_tracing()  # off since a forward or a step that raised
        if depth == 0:
            tls.child_depth = 2 if type(module).__name__ in rec.wrapper_classes else 1
            if rec.budget_spent() and torch.is_grad_enabled():
                rec.stop_for_budget()
            rec.register_root(rec.owner(module), module)
            mid = rec.model_of.get(id(module))
            model = rec.roots[mid]() if mid in rec.roots else module
            acc = rec.cur
            facts = {"training_at_forward": rec.modes(model),
                     "grad_enabled_at_forward": torch.is_grad_enabled(),
                     "inference_mode_at_forward": torch.is_inference_mode_enabled(),
                     "autocast_at_forward": rec.autocast_state()}
            tls.root_grad = facts["grad_enabled_at_forward"]
            tls.bn_watch = None
            tls.off_forward = None
            if not tls.root_grad:
                cause = grad_off_cause()
                if cause is not None:
                    facts["grad_off_cause"] = cause
                    # its parameters, to tell at the backward whether it was part of the step;
                    # one record per switch-off site (an evaluation loop is one), latest last
                    offs = acc["off_forwards"]
                    off = offs.pop((cause["path"], cause["line"]), None)
                    if off is None:
                        rec.cause_seq += 1
                        off = {"id": rec.cause_seq, "cause": cause, "params": set()}
                    offs[(cause["path"], cause["line"])] = tls.off_forward = off
            if not tls.root_grad or facts["inference_mode_at_forward"]:
                # no backward can follow this forward: a train-mode BatchNorm in it updates its
                # running statistics outside the training step (see post), unless the backward
                # shows the forward was the step's own, swallowed by no_grad (GM102)
                bns = [(n, m) for n, m in rec.special.get(mid, ()) if isinstance(m, bn_cls)
                       and m.training and m.track_running_stats and m.momentum != 0]
                if bns:
                    tls.bn_watch = (bns, [rec.bn_state(m) for _, m in bns], module,
                                    tls.off_forward["id"] if tls.off_forward else 0)
            seen = acc["roots"].get(mid)
            if mid is not None and (seen is None or (not seen["grad_enabled_at_forward"]
                                                     and facts["grad_enabled_at_forward"])):
                acc["roots"][mid] = facts
            path, line = rec.site()
            rec.record("forward", path, line, {
                "module": type(module).__name__, "training": bool(module.training),
                "grad_enabled": facts["grad_enabled_at_forward"],
                "inference_mode": facts["inference_mode_at_forward"],
                "autocast": facts["autocast_at_forward"],
                "eval_submodules": [n for n, t in facts["training_at_forward"].items() if not t],
            })
            if facts["grad_enabled_at_forward"] and module.training:
                try:
                    rec.input_stats(type(module).__name__, args, path, line)
                    rec.watch_reconstruction(args)
                except Exception:
                    pass
        elif depth == tls.child_depth:
            rec.child_input(args)
        params = module._parameters
        if params and depth and tls.root_grad and not torch.is_grad_enabled():
            # part of a training forward under no_grad/inference_mode: which one, per parameter
            inner = rec.cur["grad_off_inner"]
            cause = grad_off_cause()
            if cause is not None:
                for p in params.values():
                    if p is not None:
                        inner.setdefault(id(p), cause)
        if params:
            used = rec.cur["used"]
            off = tls.off_forward["params"] if tls.off_forward and not torch.is_grad_enabled() \
                else None
            for p in params.values():
                if p is not None:
                    used.add(id(p))
                    if off is not None:
                        off.add(id(p))
        if isinstance(module, bn_cls):
            check_bn(module)
        if rec.detailed_step():
            for a in args:
                if rec.is_graph(a):
                    seen_graph(module, a)

    def grad_off_cause():
        """The no_grad/inference_mode/set_grad_enabled(False) entered in user code whose frame
        is still running (so it is the one in force), as a cause site; None when unknown."""
        if tls.grad_off is None:
            return None
        frame, stack, decorated = tls.grad_off
        f = sys._getframe(2)
        while f is not None and f is not frame:
            f = f.f_back
        if f is None or not stack:
            return None
        # `at`: the statement of that frame running now, in the switched-off block (the
        # forward to move out of it); `line`: where gradients were switched off
        return {"path": stack[0][0], "line": stack[0][1], "stack": stack,
                "at": stack[0][1] if decorated else f.f_lineno}

    @guarded
    def post(module, args, output):
        tls.depth = max(0, tls.depth - 1)
        if tls.untraced is module:
            tls.untraced = None
            rec.resume_tracing()
        if tls.depth == tls.child_depth:
            rec.child_output(module, output)
        if tls.depth == 0 and torch.is_grad_enabled():
            try:
                rec.collect_components(output)
            except Exception:
                pass
        if tls.depth == 0:
            tls.off_forward = None
            rec.note_reconstruction()
            if tls.bn_watch is not None:
                watch, tls.bn_watch = tls.bn_watch, None
                bn_moved_outside_step(*watch)
        outputs = rec.cur["finite"]
        if len(outputs) < MAX_HELD_OUTPUTS and torch.is_grad_enabled():
            # held (a detached view, no copy) and checked only when the loss is not finite
            out = output[0] if isinstance(output, (tuple, list)) and output else output
            if isinstance(out, torch.Tensor) and out.is_floating_point():
                outputs.append((rec.module_names.get(id(module), type(module).__name__),
                                out.detach()))
        if isinstance(module, bn_cls):
            rec.bn_versions[id(module)] = rec.bn_state(module)

    def bn_moved_outside_step(bns, before, module, forward) -> None:
        moved = [n for (n, m), old in zip(bns, before) if rec.bn_state(m) != old]
        if not moved:
            return
        params = list(module.parameters())
        if params and not any(p.requires_grad for p in params):
            return  # a frozen copy (an EMA teacher, a target network): no trained model's statistics
        # the call that made the extra forward, not the model's own method that ran it
        stack = rec.stack_outside(module, 3)
        if not stack or tuple(stack[0]) in rec.bn_outside_seen:
            return
        rec.bn_outside_seen.add(tuple(stack[0]))
        rec.cause("bn.forward", stack, modules=moved[:8])
        rec.add("batchnorm", {"kind": "outside_step", "module": ", ".join(moved[:4]),
                              "path": stack[0][0], "line": stack[0][1], "stack": stack,
                              "step": rec.step_count, "detail": "gradients disabled",
                              "forward": forward})

    def check_bn(m) -> None:
        old = rec.bn_versions.get(id(m))
        now = rec.bn_state(m)
        name = rec.module_names.get(id(m), type(m).__name__)
        if old is not None:
            # same tensor with a new version: written in place; another tensor: reassigned
            changed = [b if o[0] == n[0] else f"{b} (replaced)" for b, (o, n) in
                       zip(("running_mean", "running_var", "num_batches_tracked"), zip(old, now))
                       if o != n]
            if changed:
                rec.add("batchnorm", {"kind": "modified", "module": name, "step": rec.step_count,
                                      "buffers": changed})
        if m.training and torch.is_grad_enabled() and id(m) not in rec.bn_stalled_seen and (
                m.momentum == 0 or not m.track_running_stats):
            # a training forward that leaves the running statistics where they are
            rec.bn_stalled_seen.add(id(m))
            rec.add("batchnorm", {"kind": "stalled", "module": name, "step": rec.step_count,
                                  "detail": "momentum=0" if m.momentum == 0
                                  else "track_running_stats=False"})
        elif m.training and torch.is_grad_enabled() and id(m) not in rec.bn_stalled_seen and \
                m.momentum is None:
            # a cumulative average: each batch weighs 1/num_batches_tracked, so the statistics
            # stop following the model as it trains
            rec.bn_stalled_seen.add(id(m))
            rec.add("batchnorm", {"kind": "cumulative", "module": name, "step": rec.step_count,
                                  "detail": "momentum=None"})
        if not m.training and torch.is_grad_enabled() and id(m) not in rec.bn_frozen_seen:
            rec.bn_frozen_seen.add(id(m))
            rec.add("batchnorm", {"kind": "frozen", "module": name, "step": rec.step_count})

    def seen_graph(module, g) -> None:
        """At a detailed step (a graph made per step, by edge dropping, would otherwise cost its
        facts at every step): the graph's self loops and in-degrees, once per step."""
        cache = rec.cur["graphs"]
        if id(g) in cache:
            return
        cache[id(g)] = g  # keeps the id unique during the step
        facts = rec.graph_facts(g)
        path, line = rec.site()
        rec.add("graphs", {"path": path or "", "line": line, "where": "forward",
                           "module": rec.module_names.get(id(module), type(module).__name__),
                           "step": rec.step_count, **facts})

    mm = nn.modules.module
    rec.handles.append(mm.register_module_forward_pre_hook(pre))
    rec.handles.append(mm.register_module_forward_hook(post))

    # -- parameters read outside any forward -----------------------------------------------------
    def getattr_wrapper(original):
        def __getattr__(self, name):
            value = original(self, name)
            # inside a forward, the parameters of the modules that run are counted by the hooks;
            # a parameter container's entries (`self.mask_tokens[ntype]`) belong to no module
            # that runs. Outside one, only user code's reads count (a layer initialising its own
            # weight in its constructor uses nothing)
            if not tls.busy and isinstance(value, nn.Parameter) and (
                    isinstance(self, CONTAINERS)
                    or not tls.depth and rec.rel(sys._getframe(1).f_code.co_filename) is not None):
                note_read(value)
            return value
        return __getattr__

    @guarded
    def note_read(p):
        """A parameter that user code reads off its module outside any forward (a mask token a
        helper writes into the input, a weight tied by hand) is used by this step as the
        parameters of the modules that run are. Read with gradients off, the switch in force is
        the cause of its missing gradient unless that switch also ran whole forwards (an
        evaluation between steps): decided at the backward."""
        rec.cur["used"].add(id(p))
        if not torch.is_grad_enabled():
            cause = grad_off_cause()
            if cause is not None:
                rec.cur["grad_off_reads"].setdefault(id(p), cause)

    CONTAINERS = (nn.ParameterDict, nn.ParameterList)
    rec.patch(nn.Module, "__getattr__", getattr_wrapper)

    # -- BatchNorm resets ------------------------------------------------------------------------------
    def bn_reset_wrapper(original):
        def reset_running_stats(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            note_bn_reset(self)
            return out
        return reset_running_stats

    @guarded
    def note_bn_reset(m):
        f = sys._getframe(1)
        while f is not None and rec.rel(f.f_code.co_filename) is None:
            if f.f_code.co_name == "__init__":
                return  # the module's own construction
            f = f.f_back
        if f is None:
            return
        path, line = rec.rel(f.f_code.co_filename), f.f_lineno
        name = rec.module_names.get(id(m), type(m).__name__)
        rec.bn_versions[id(m)] = rec.bn_state(m)
        rec.add("batchnorm", {"kind": "reset", "module": name, "path": path, "line": line,
                              "step": rec.step_count})
        rec.record("bn.reset", path, line, {"module": name})

    rec.patch(bn_cls, "reset_running_stats", bn_reset_wrapper)
