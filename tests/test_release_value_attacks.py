"""Attacks on the release value and on privselect's own channels, run against the real PrivateTuner and PrivateStudy.

(1) a dtype's ``metadata`` carries any object out (the run's Generator); (2) a class forged during a run under a
trusted module name, or a trusted class given a class attribute during a run, carries one out; (3) a seed nested
under a seed-like field (a list, tuple, array, float, string; the keys seeds, seed0, myseed, randomstate, ...);
(4) the candidate checks after the draw write a log record and let the operator's print through once per run;
(5) caches whose statistics count runs; (6) process settings a run changes persist after ``run()``; (7) tempfile's
name generator counts the runs' temp files; (8) interpreter counters (the collector's statistics and callbacks,
thread-name counters, imported modules) under ``isolate=True``. A property test builds random values from the
allowlist with one hostile ingredient and checks that the ingredient never survives.
"""

import concurrent.futures
import gc
import logging
import os
import sys
import tempfile
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import privselect as ps
from privselect.errors import ReleaseRefusedError
from privselect.integrations.optuna import PrivateStudy
from privselect.tuning import AllRunsFailedError, PrivateTuner, RandomnessLeakError
from privselect.tuning.guard import guard_release, seed_like
from privselect.tuning.release import release_value, trust_snapshot
from privselect.tuning.space import Choice, Uniform

DELTA = 1e-5


def _tuner(train, k=None, **kwargs):
    kwargs.setdefault("seed", 0)
    kwargs.setdefault("backend", "sequential")
    return PrivateTuner(train, {"x": Choice([0])}, ps.Gaussian(1.0), k or ps.Geometric(mean=1.5), DELTA,
                        accountant="prv", **kwargs)


def k_of(seed: int, k) -> int:
    """K as the engine draws it from ``seed`` (docs/release.md: the first spawned child of the seed draws K)."""
    return int(k.sample(np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(3)[0]))))


def _seeds_with_different_k(k, first=1):
    """Two seeds whose K differ (the smaller K first)."""
    ks = {}
    for seed in range(200):
        ks.setdefault(k_of(seed, k), seed)
        if len(ks) >= 2 and max(ks) >= first + 3:
            break
    small, large = min(ks), max(ks)
    return (ks[small], small), (ks[large], large)


def _released_or_refused(tuner, data=None):
    """The released output, or None when every run was refused."""
    try:
        return tuner.run(data).best_output
    except AllRunsFailedError:
        return None


# -- (1) dtype metadata -------------------------------------------------------------------------------------------


def _metadata_carrier(params, data, rng):
    return 1.0, {"w": np.zeros(0, dtype=np.dtype("f8", metadata={"g": rng}))}


@pytest.mark.parametrize("isolate", [False, True])
def test_a_generator_in_a_dtypes_metadata_is_not_released(isolate):
    released = _released_or_refused(_tuner(_metadata_carrier, isolate=isolate))
    assert released is None or released["w"].dtype.metadata is None
    with pytest.raises(ReleaseRefusedError, match=r"output\[key #0\]: numpy.ndarray has a dtype that carries metadata"):
        _tuner(_metadata_carrier).dry_run(None)


def test_a_generator_in_a_dtypes_metadata_is_not_released_by_a_study():
    def objective(trial):
        trial.suggest_float("x", 0.0, 1.0)
        return 1.0, np.zeros(0, dtype=np.dtype("f8", metadata={"g": trial.rng}))

    study = PrivateStudy(ps.Gaussian(1.0), ps.Geometric(mean=1.5), DELTA, seed=0, accountant="prv")
    try:
        released = study.optimize(objective).best_output
    except AllRunsFailedError:
        released = None
    assert released is None or released.dtype.metadata is None


def test_a_plain_array_and_scalar_keep_their_values_and_lose_nothing_else():
    value = {"a": np.arange(3, dtype=">i4"), "s": np.float32(2.5), "l": np.longdouble(1) / 3}
    out = release_value(value)
    assert out["a"].dtype == np.dtype(">i4") and out["a"].tolist() == [0, 1, 2]
    assert out["s"] == np.float32(2.5) and type(out["s"]) is np.float32
    assert out["l"] == np.longdouble(1) / 3  # rebuilt through the dtype, not through a Python float


# -- (2) trusted classes: forged at run time, or changed during the run -------------------------------------------


def _forges_a_sklearn_class(params, data, rng):
    from sklearn.base import BaseEstimator

    module = types.ModuleType("sklearn._forged")
    sys.modules["sklearn._forged"] = module
    forged = type("Forged", (BaseEstimator,), {"__module__": "sklearn._forged", "g": rng})
    module.Forged = forged
    return 1.0, forged()


def _injects_into_linear_model(params, data, rng):
    import sklearn.linear_model
    from sklearn.base import BaseEstimator

    forged = type("Injected", (BaseEstimator,), {"__module__": "sklearn.linear_model", "g": rng})
    sklearn.linear_model.Injected = forged
    return 1.0, forged()


def _sets_a_class_attribute(params, data, rng):
    from sklearn.linear_model import LinearRegression

    LinearRegression.leak = rng
    return 1.0, LinearRegression().fit(np.eye(2), np.ones(2))


@pytest.mark.parametrize("trainer", [_forges_a_sklearn_class, _injects_into_linear_model, _sets_a_class_attribute])
def test_a_class_forged_or_changed_during_the_run_is_not_trusted(trainer):
    import sklearn.linear_model  # the trusted class exists before the selection

    try:
        released = _released_or_refused(_tuner(trainer))
        assert released is None or not isinstance(getattr(type(released), "g", getattr(type(released), "leak", None)),
                                                  np.random.Generator)
        with pytest.raises(ReleaseRefusedError, match="not a trusted estimator class, or its class changed"):
            _tuner(trainer).dry_run(None)
    finally:
        sys.modules.pop("sklearn._forged", None)
        for name in ("Injected",):
            if hasattr(sklearn.linear_model, name):
                delattr(sklearn.linear_model, name)
        if "leak" in vars(sklearn.linear_model.LinearRegression):
            del sklearn.linear_model.LinearRegression.leak
    # an unchanged trusted class is still released, as a new instance
    model = _tuner(lambda params, data, rng: (1.0, sklearn.linear_model.LinearRegression().fit(np.eye(2), np.ones(2)))
                   ).run(None).best_output
    assert type(model) is sklearn.linear_model.LinearRegression and np.allclose(model.predict(np.eye(2)), 1.0)


def test_pickling_a_trusted_estimator_keeps_its_class_trusted_but_a_forged_slot_list_does_not():
    # pickle caches the declared slot names on a class (``__slotnames__``) the first time one of its instances is
    # pickled, as the first run's release does: later runs of the same selection must still release that class
    import pickle

    from sklearn.linear_model import Ridge

    if "__slotnames__" in vars(Ridge):
        del Ridge.__slotnames__
    snapshot = trust_snapshot("slotnames")
    try:
        pickle.dumps(Ridge(alpha=2.0))
        assert vars(Ridge)["__slotnames__"] == []
        assert snapshot.trusts_estimator(Ridge)
        Ridge.__slotnames__ = ["coef_"]  # not what pickle caches: a changed class
        assert not snapshot.trusts_estimator(Ridge)
    finally:
        del Ridge.__slotnames__


def test_a_privselect_estimator_first_reached_inside_a_run_is_released():
    # ps.DPSGDClassifier is imported lazily: a trainer that is the first to touch it must still train a trusted
    # class (a fresh interpreter, so no other test has imported it)
    import subprocess

    script = """
import sys
import numpy as np
import privselect as ps
assert "privselect.apps.dpsgd" not in sys.modules

def train(params, data, rng):
    X, y = data
    model = ps.DPSGDClassifier(noise_multiplier=2.0, sampling_rate=0.5, epochs=1, classes=[0, 1], random_state=rng)
    return 1.0, model.fit(X, y)

X = np.eye(4)
y = np.array([0, 1, 0, 1])
tuner = ps.PrivateTuner(train, {"x": ps.Choice([0])}, ps.Gaussian(2.0), ps.Geometric(mean=2), 1e-5, seed=0,
                        backend="sequential")
print(type(tuner.run((X, y)).best_output).__name__)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "DPSGDClassifier"


def test_a_value_type_or_converter_registered_during_the_run_is_not_used():
    import dataclasses

    from privselect.tuning.release import trust_value_type

    def registers(params, data, rng):
        @dataclasses.dataclass(frozen=True)
        class Holder:
            g: object

        trust_value_type(Holder)
        return 1.0, Holder(np.zeros(1))

    with pytest.raises(ReleaseRefusedError, match="not a trusted value type"):
        _tuner(registers).dry_run(None)


# -- (3) seed-like fields, nested ----------------------------------------------------------------------------------


def _carriers_of(seed: int):
    return {
        "list": {"seed": [seed]}, "tuple": {"seed": (seed,)}, "array": {"seed": np.array([seed], dtype=np.uint64)},
        "0-d array": {"seed": np.array(seed, dtype=np.uint64)}, "float": {"seed": float(seed)},
        "str": {"seed": str(seed)}, "seeds": {"seeds": [seed]}, "seed0": {"seed0": seed}, "myseed": {"myseed": seed},
        "randomstate": {"randomstate": seed}, "rng": {"rng": seed}, "prng_key": {"prng_key": [seed]},
        "key": {"key": np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32)}, "deep": {"config": {"train": [{"Seed_Value": [seed]}]}},
    }


@pytest.mark.parametrize("carrier", list(_carriers_of(0)))
def test_a_seed_nested_under_a_seed_like_field_is_refused_or_stripped(carrier):
    def keeps_seed(params, data, rng):
        return 1.0, {"weights": [0.5], **_carriers_of(int(rng.integers(2**63)))[carrier]}

    assert _released_or_refused(_tuner(keeps_seed)) is None
    with pytest.raises(RandomnessLeakError, match="in a field named like a seed"):
        _tuner(keeps_seed).dry_run(None)
    stripped = _tuner(keeps_seed, release="strip").run(None).best_output
    assert stripped["weights"] == [0.5]
    leftover = [value for value in _leaves(stripped) if value is not None and value != 0.5]
    assert leftover == []  # the seed's carrier became None: no number of it is left


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


@pytest.mark.parametrize("name", ["seed", "seeds", "seed0", "myseed", "random_state", "randomState", "rng_state",
                                  "rng", "train_rng", "key", "subkey", "prng_key", "base-seed", "SEED"])
def test_seed_like_spellings(name):
    assert seed_like(name)


@pytest.mark.parametrize("name", ["weights", "n_runs", "epochs", "coef_", "intercept_", "monkey", "strong", "range"])
def test_fields_that_are_not_seed_like(name):
    assert not seed_like(name)


# -- (4) the candidate checks run silenced ------------------------------------------------------------------------


def test_candidate_checks_write_no_record_and_no_output_that_counts_k(capfd, caplog):
    k = ps.Geometric(mean=6)
    (seed_a, k_a), (seed_b, k_b) = _seeds_with_different_k(k)

    def privacy(params):
        print("privacy called")
        logging.getLogger("operator").warning("privacy called")
        return ps.Gaussian(params["s"])

    def counts(seed):
        tuner = PrivateTuner(lambda params, data, rng: params["s"], {"s": Uniform(2.0, 4.0)}, privacy, k, 1e-6,
                             base_epsilon=2.5, seed=seed, accountant="prv")
        tuner.certificate  # noqa: B018 - built before, outside what is counted
        capfd.readouterr()
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            tuner.run(None)
        out, err = capfd.readouterr()
        return (out + err).count("privacy called"), len(caplog.records)

    assert k_a != k_b
    assert counts(seed_a) == counts(seed_b)


# -- (5) no cache counts runs ---------------------------------------------------------------------------------------


def test_no_privselect_function_keeps_cache_statistics():
    import privselect.apps.ptr  # noqa: F401 - the regression apps' calibrations
    import privselect.tuning.engine  # noqa: F401
    from privselect.apps.ptr.ops import ops_mu_bound

    first = ops_mu_bound(1.0, 1e-6)
    assert ops_mu_bound(1.0, 1e-6) == first  # still memoised
    counting = sorted(f"{name}.{attribute}" for name, module in list(sys.modules.items())
                      if name == "privselect" or name.startswith("privselect.")
                      for attribute, value in list(vars(module).items()) if hasattr(value, "cache_info"))
    assert counting == []


# -- (6), (7) process settings and tempfile's names, restored after every run ------------------------------------


def _settings():
    import sklearn
    import torch

    name_generator = tempfile._get_candidate_names()
    return {"environ": dict(os.environ), "err": np.geterr(), "print": np.get_printoptions(),
            "sklearn": sklearn.get_config(), "threads": torch.get_num_threads(), "dtype": torch.get_default_dtype(),
            "recursion": sys.getrecursionlimit(), "names": (name_generator, name_generator.rng.getstate()),
            "cwd": os.getcwd()}


def _changes_settings(params, data, rng):
    import sklearn
    import torch

    os.environ["PRIVSELECT_RUNS"] = str(int(os.environ.get("PRIVSELECT_RUNS", "0")) + 1)
    np.seterr(all="ignore" if np.geterr()["over"] == "warn" else "warn")
    np.set_printoptions(precision=np.get_printoptions()["precision"] + 1)
    sklearn.set_config(working_memory=sklearn.get_config()["working_memory"] + 1)
    torch.set_num_threads(torch.get_num_threads() + 1)
    torch.set_default_dtype(torch.float64 if torch.get_default_dtype() == torch.float32 else torch.float32)
    sys.setrecursionlimit(sys.getrecursionlimit() + 1)
    with tempfile.NamedTemporaryFile():  # one name drawn from tempfile's generator per run
        pass
    return 1.0, {"w": [0.5]}


@pytest.mark.parametrize("isolate", [False, True])
def test_settings_a_run_changes_are_restored_after_the_run(isolate):
    import torch  # noqa: F401 - loaded, so its settings are in play

    before = _settings()
    assert _tuner(_changes_settings, k=ps.Geometric(mean=6), seed=4, isolate=isolate).run(None).selected
    assert _settings() == before


def test_each_run_draws_temp_names_from_a_fresh_generator_not_the_callers():
    names = []

    def draws_names(params, data, rng):
        names.append(next(tempfile._get_candidate_names()))
        return 1.0

    generator = tempfile._get_candidate_names()
    state = generator.rng.getstate()
    _tuner(draws_names, k=ps.Geometric(mean=6), seed=4).run(None)
    assert tempfile._get_candidate_names() is generator and generator.rng.getstate() == state
    assert len(names) == k_of(4, ps.Geometric(mean=6)) and len(set(names)) == len(names)


# -- (8) interpreter counters under isolate=True --------------------------------------------------------------------

_SEEN_BY_HOOK: list = []


def _gc_hook(phase, info):
    _SEEN_BY_HOOK.append(info.get("collected"))


def _leaves_interpreter_traces(params, data, rng):
    gc.collect()
    if _gc_hook not in gc.callbacks:
        gc.callbacks.append(_gc_hook)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(int).result()
    if float(np.mean(data)) > 0.5:  # a data branch of any run: a lazy import
        import tabnanny  # noqa: F401 - a module no other test or library here imports
    return 1.0, {"w": [0.5]}


def _interpreter_counters():
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        prefix = pool._thread_name_prefix
    return gc.get_stats()[2]["collections"], int(prefix.rsplit("-", 1)[1])


def test_interpreter_counters_do_not_count_runs_under_isolation():
    assert "tabnanny" not in sys.modules
    k = ps.Geometric(mean=6)
    (seed_a, k_a), (seed_b, k_b) = _seeds_with_different_k(k)
    steps = []
    for seed in (seed_a, seed_b):
        collections, executors = _interpreter_counters()
        _tuner(_leaves_interpreter_traces, k=k, seed=seed, isolate=True).run(np.ones(3))
        after_collections, after_executors = _interpreter_counters()
        steps.append((after_collections - collections, after_executors - executors))
    assert k_a != k_b and steps[0] == steps[1]  # the same whatever K
    assert _gc_hook not in gc.callbacks and _SEEN_BY_HOOK == []
    assert "tabnanny" not in sys.modules


# -- the hostile-value property ----------------------------------------------------------------------------------

_NUMERIC = st.sampled_from(["?", "i1", "u2", "<i4", ">i8", "<f4", ">f8", "c8"])
_SAFE_KEYS = st.text(alphabet="abcdefghijklmnoptuvwxyz_", min_size=1, max_size=6).filter(lambda k: not seed_like(k))
_ATOMS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
          | st.binary(max_size=5)
          | hnp.arrays(_NUMERIC, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                       elements={"allow_nan": False}))
_CLEAN = st.recursive(_ATOMS, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                      | st.dictionaries(_SAFE_KEYS, inner, max_size=3), max_leaves=8)
_SEED_NAMES = st.sampled_from(["seed", "seeds", "seed0", "myseed", "random_state", "randomState", "rng", "train_rng",
                               "key", "prng_key", "rng_state", "base_seed"])


class _ListWithAttribute(list):
    pass


def _hostile(kind: str, marker: object, clean, name: str):
    """One hostile ingredient holding ``marker`` (and what the caller must undo after the walk)."""
    import sklearn.linear_model
    from sklearn.base import BaseEstimator

    if kind == "dtype metadata":
        return np.zeros(2, dtype=np.dtype("f8", metadata={"m": marker})), None
    if kind == "subclass":
        holder = _ListWithAttribute([clean])
        holder.marker = marker
        return holder, None
    if kind == "class attribute":
        sklearn.linear_model.Ridge.marker = marker
        return sklearn.linear_model.Ridge(), lambda: delattr(sklearn.linear_model.Ridge, "marker")
    if kind == "registered module name":
        module = types.ModuleType("sklearn._hostile")
        sys.modules["sklearn._hostile"] = module
        module.Hostile = type("Hostile", (BaseEstimator,), {"__module__": "sklearn._hostile", "marker": marker})
        return module.Hostile(), lambda: sys.modules.pop("sklearn._hostile")
    return {name: clean if clean is not None else 7}, None  # a seed-like field (None alone is released)


def _nest(value, path):
    for container, position, sibling in path:
        items = [sibling, sibling]
        items.insert(position % 3, value)
        value = {"a": items[0], "b": items[1], "c": items[2]} if container == "dict" else \
            (items if container == "list" else tuple(items))
    return value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clean=_CLEAN, kind=st.sampled_from(["dtype metadata", "subclass", "class attribute", "registered module name",
                                           "seed-like field"]),
       name=_SEED_NAMES, path=st.lists(st.tuples(st.sampled_from(["dict", "list", "tuple"]), st.integers(0, 2), _CLEAN),
                                       max_size=3),
       release=st.sampled_from(["refuse", "strip"]))
def test_a_hostile_ingredient_never_survives_the_release(clean, kind, name, path, release):
    import sklearn.linear_model  # noqa: F401 - its classes are trusted before the "run"

    trust = trust_snapshot("property")  # before the run
    value = _nest(clean, path)
    assert _same(guard_release(release_value(value, "output", release, trust), "output", release), value)
    marker = object()
    hostile, undo = _hostile(kind, marker, clean, name)
    try:
        try:
            released = guard_release(release_value(_nest(hostile, path), "output", release, trust), "output", release)
        except (ReleaseRefusedError, RandomnessLeakError):
            return  # refused: the hostile part does not leave
    finally:
        if undo is not None:
            undo()
    # only release="strip" of a seed-like field gets here: the field is None, nothing of it is left
    assert kind == "seed-like field" and release == "strip"
    assert _holds_field(released, name) is None


def _same(released, value) -> bool:
    """``released`` is ``value`` rebuilt: the same types, dtypes and numbers."""
    if type(released) is not type(value):
        return False
    if isinstance(value, np.ndarray):
        return released.dtype == value.dtype and released.shape == value.shape and np.array_equal(released, value)
    if isinstance(value, dict):
        return list(released) == list(value) and all(_same(released[key], value[key]) for key in value)
    if isinstance(value, (list, tuple)):
        return len(released) == len(value) and all(_same(a, b) for a, b in zip(released, value, strict=True))
    return released == value or (released != released and value != value)


def _holds_field(value, name):
    """The value under the first field called ``name`` in ``value`` (None if there is none)."""
    if isinstance(value, dict):
        if name in value:
            return value[name]
        items = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for item in items:
        found = _holds_field(item, name)
        if found is not None:
            return found
    return None
