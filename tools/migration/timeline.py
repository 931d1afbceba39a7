"""The timeline picture of `./run migrate`, drawn with matplotlib (Debian's
python3-matplotlib): for each strategy, its median-network-downtime
migration, with one lane per host. Time is in ms from the start of QEMU's
downtime (the source's completion minus its downtime figure). Ticks:
QEMU's events and the destination ledger's moments; bars: the PMD's
downtime ledger phases; shaded: QEMU's downtime (grey); under the lanes,
the network downtime, source stop request to destination RDY; the
destination device's first RARP on the wire as a tick of its own."""
import statistics

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

STOP_BARS = [("stop_requested", "suspend_issued", "prepare", "#9edae5"),
             ("suspend_issued", "suspend_done", "suspend batch", "#1f77b4"),
             ("suspend_done", "bases_handed_back", "bases to vhost", "#aec7e8"),
             ("bases_handed_back", "used_rings_logged", "used rings logged", "#17becf")]
START_BARS = [("start_requested", "memory_registered", "memory", "#ffbb78"),
              ("memory_registered", "virtqs_created", "virtqs", "#c49c94"),
              ("virtqs_created", "all_ready", "start batch", "#ff7f0e"),
              ("all_ready", "notifiers_set", "host notifiers", "#98df8a")]
# Ledger moments drawn as ticks on the destination lane: dev_conf returns
# once the start is posted; the device's own RARP is posted at all_ready,
# the guest's announce comes later.
LEDGER_TICKS_DST = [("conf_returned", "dev_conf returned"), ("announced", "guest's announce")]
TICKS_SRC = [("source_stop", "STOP"), ("source_completed", "completed")]
TICKS_DST = [("destination_completed", "completed"), ("destination_resume", "RESUME")]
# Label heights (lane units from its middle), taken in turn by a lane's
# ticks in time order: labels of nearby ticks do not overlap.
LABEL_ROWS = (0.25, -0.35, -0.05)
QEMU_COLOR, LEDGER_COLOR, WIRE_COLOR = "#d62728", "#2ca02c", "#9467bd"
LANES = {"source host": 1, "destination host": 0}  # y of each lane


def _median_run(rows, strategy):
    rs = [r for r in rows if r["strategy"] == strategy]
    med = statistics.median_low([r["network_downtime_ms"] for r in rs])
    return next(r for r in rs if r["network_downtime_ms"] == med)


def _ms(t, t0):
    return (t - t0) * 1e3


def _lane(ax, y, led, bars, ticks, t0):
    """One host's lane: its ledger phases as bars, then its ticks."""
    for a, b, label, color in bars:
        if a in led and b in led:
            ax.broken_barh([(_ms(led[a], t0), max(_ms(led[b], t0) - _ms(led[a], t0), 1e-3))],
                           (y - 0.15, 0.3), color=color)
    present = sorted((t, text, color) for t, text, color in ticks if t is not None)
    for i, (t, text, color) in enumerate(present):
        x = _ms(t, t0)
        ax.vlines(x, y - 0.4, y + 0.4, color=color, linewidth=1.5)
        ax.annotate(text, (x, y + LABEL_ROWS[i % len(LABEL_ROWS)]), xytext=(3, 0),
                    textcoords="offset points", color=color, fontsize=8)


def _panel(ax, r):
    t0 = r["qemu_events"]["downtime_start"]
    ax.set_title(f"{r['strategy']}: QEMU downtime {r['downtime_ms']:.0f} ms, network downtime "
                 f"{r['network_downtime_ms']:.1f} ms", loc="left", fontsize=10, fontweight="bold")
    ax.axvspan(0, r["downtime_ms"], color="#eeeeee", zorder=0)
    n0 = _ms(r["source_ledger"]["stop_requested"], t0)
    ax.broken_barh([(n0, r["network_downtime_ms"])], (-0.5, 0.06), color="#7f7f7f")
    ev = r["qemu_events"]
    src_ticks = [(ev.get(k), "QEMU " + label, QEMU_COLOR) for k, label in TICKS_SRC]
    dst_ticks = [(ev.get(k), "QEMU " + label, QEMU_COLOR) for k, label in TICKS_DST]
    dst_ticks += [(r["destination_ledger"].get(k), label, LEDGER_COLOR) for k, label in LEDGER_TICKS_DST]
    dst_ticks.append((r.get("destination_first_rarp"), "RARP on the wire", WIRE_COLOR))
    _lane(ax, LANES["source host"], r["source_ledger"], STOP_BARS, src_ticks, t0)
    _lane(ax, LANES["destination host"], r["destination_ledger"], START_BARS, dst_ticks, t0)
    ax.set_yticks(list(LANES.values()), list(LANES))
    ax.set_ylim(-0.6, 1.6)
    ax.grid(True, axis="x", color="#dddddd")


def write(path, rows, strategies):
    runs = [_median_run(rows, s) for s in strategies]
    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 1.9 * len(runs) + 1.4), sharex=True,
                             squeeze=False)
    for ax, r in zip(axes[:, 0], runs):
        _panel(ax, r)
    axes[-1, 0].set_xlabel("ms from the start of QEMU's downtime")
    fig.suptitle(f"live migration, {runs[0]['rings']} virtqs: median run per strategy")
    legend = [Patch(color=c, label=f"source: {label}") for _, _, label, c in STOP_BARS]
    legend += [Patch(color=c, label=f"destination: {label}") for _, _, label, c in START_BARS]
    legend += [Patch(color="#eeeeee", label="QEMU downtime"),
               Patch(color="#7f7f7f", label="network downtime")]
    fig.legend(handles=legend, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path)
    plt.close(fig)
