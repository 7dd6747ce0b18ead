"""Bindings: a controller's inputs drive a device's outputs, declared in `[bindings.<name>]` (no user code).

This package is the pure core of a binding, with no I/O and no clock of its own:

- `spec`: the config tables read into frozen dataclasses (`parse_bindings`) and checked against the
  configured devices' schemas (`check_bindings`);
- `paths`: input paths (`state.axes.left_y`) read from a source's latest samples, and command
  fields looked up in the message registry;
- `shaping`: deadzone, curve, invert, scale and turbo of one input; the slew limiter of an output;
- `mixing`: differential drive (arcade, tank) and direct axis -> field, in normalized units;
- `buttons`: press, release, hold, double press, toggle and axis thresholds, as pure detectors;
- `evaluator`: one binding's output tick (`Evaluator.output`) and its button actions
  (`Evaluator.sample`), the only thing the runtime calls.

The runtime (timers, leases, arbitration, the safe output re-sent until confirmed) lives elsewhere
and feeds these with the source's samples and the time.
"""
