"""Random damage to a valid config file (a wrong type, NaN or infinity, a negative number, an unknown key, a key
given twice, a cut-off end) gives a ConfigError that names the file and the damaged key, or exactly the config the
damaged file says: never a silent change."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toporag_lib.settings import ConfigError
from toporag_lib.training.train_config import TrainConfig, parse_train_config

FILE = "configs/fuzzed.json"
VALID: dict[str, Any] = {
    "dataset": "synthetic_scenes",
    "dataset_options": {"num_images": 20, "questions_per_image": 2, "seed": 1},
    "limits": {"train": 8, "val": 4, "test": None},
    "retrieval": {"k0": 3, "k2": 1, "c2": 0.5, "cost_e": 0.5},
    "lift": {"tree": "random", "seed": 3, "max_cycle_len": 6},
    "model": {"encoder": "cellular", "hidden_dim": 32, "num_layers": 2, "dropout": 0.1, "lora": False},
    "epochs": 2, "batch_size": 4, "lr": 1e-3, "lora_lr": 2e-4, "weight_decay": 0.05, "warmup_ratio": 0.1,
    "schedule": "cosine", "adam_betas": [0.9, 0.95], "max_grad_norm": 0.1, "patience": 2, "select_by": "val_score",
    "max_txt_len": 256, "seed": 42, "question_suffix": "",
}
SECTIONS = ("", "dataset_options", "limits", "retrieval", "lift", "model")  # objects a key can be added to
OTHER_VALUES = ["text", True, None, [1], {"x": 1}, 7, 2.5, ""]  # a value of each JSON type


def leaves(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every leaf (dict keys and list indices)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in leaves(v, (*path, i))]
    return [path]


def get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def replaced(value: Any, path: tuple, new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    get(copy, path[:-1])[path[-1]] = new
    return copy


def dump(value: Any, extra: dict[tuple, tuple[str, Any, bool]] | None = None) -> str:
    """JSON text of `value` that, where `extra` says so, holds one more key in an object (at its start or end): a
    repeated key when it is one the object has."""
    extra = extra or {}

    def text(item: Any, path: tuple) -> str:
        if isinstance(item, dict):
            pairs = [f"{json.dumps(k)}: {text(v, (*path, k))}" for k, v in item.items()]
            if path in extra:
                key, new, first = extra[path]
                pair = f"{json.dumps(key)}: {json.dumps(new)}"
                pairs = [pair, *pairs] if first else [*pairs, pair]
            return "{" + ", ".join(pairs) + "}"
        if isinstance(item, list):
            return "[" + ", ".join(text(v, (*path, i)) for i, v in enumerate(item)) + "]"
        return json.dumps(item)  # NaN and Infinity as Python's json writes (and reads) them

    return text(value, ())


def name_of(path: tuple) -> str:
    """How an error names a leaf: its key, or the list and its index."""
    *_, last = path
    return f"{path[-2]}[{last}]" if isinstance(last, int) else str(last)


def outcome(text: str) -> TrainConfig | ConfigError:
    try:
        return parse_train_config(text, FILE)
    except ConfigError as err:
        return err


def expected_dict(values: dict[str, Any]) -> dict[str, Any]:
    return TrainConfig.from_dict(values).to_dict()


def same_type(got: Any, given: Any) -> bool:
    return type(got) is type(given) or (type(given) is int and type(got) is float) or \
        (isinstance(given, (list, dict)) and isinstance(got, (list, dict)))


damages = st.one_of(
    st.tuples(st.just("type"), st.sampled_from(leaves(VALID)), st.sampled_from(OTHER_VALUES)),
    st.tuples(st.just("nonfinite"), st.sampled_from([p for p in leaves(VALID) if type(get(VALID, p)) in (int, float)]),
              st.sampled_from([math.nan, math.inf, -math.inf])),
    st.tuples(st.just("negative"), st.sampled_from([p for p in leaves(VALID) if type(get(VALID, p)) in (int, float)]),
              st.one_of(st.integers(-10**6, -1), st.floats(-1e6, -1e-9))),
    st.tuples(st.just("unknown"), st.sampled_from(SECTIONS), st.sampled_from(["epoch", "trian", "k_1", "hidden"]),
              st.booleans()),
    st.tuples(st.just("duplicate"), st.sampled_from([p for p in leaves(VALID) if not isinstance(p[-1], int)]),
              st.sampled_from(OTHER_VALUES), st.booleans()),
    st.tuples(st.just("truncate"), st.integers(0, len(dump(VALID)) - 1)),
)


def test_the_undamaged_config_reads_as_json_reads_it():
    assert parse_train_config(dump(VALID), FILE).to_dict() == expected_dict(VALID)


@settings(max_examples=50, deadline=None)
@given(damages)
def test_damage_is_named_or_read_exactly_never_changed_silently(damage):
    kind, *args = damage
    if kind in ("type", "nonfinite", "negative"):
        path, new = args
        result = outcome(dump(replaced(VALID, path, new)))
        if isinstance(result, ConfigError):
            assert FILE in str(result) and name_of(path) in str(result), (damage, str(result))
            return
        assert kind != "nonfinite", f"{damage}: a number that is not finite was accepted"
        assert kind != "negative" or path[0] == "dataset_options", f"{damage}: a negative value was accepted"
        got = get(result.to_dict(), path)
        assert got == new and same_type(got, new), (damage, got)  # the value given, no other
        assert result.to_dict() == expected_dict(replaced(VALID, path, got))  # and nothing else moved
    elif kind == "unknown":
        section, key, first = args
        path = (section,) if section else ()
        result = outcome(dump(VALID, {path: (key, 1, first)}))
        assert isinstance(result, ConfigError) and FILE in str(result) and repr(key) in str(result), (damage, result)
    elif kind == "duplicate":
        path, new, first = args
        result = outcome(dump(VALID, {path[:-1]: (path[-1], new, first)}))
        assert isinstance(result, ConfigError), f"{damage}: a key given twice was accepted"
        assert FILE in str(result) and f"'{'.'.join(map(str, path))}' is given more than once" in str(result)
    else:
        (cut,) = args
        result = outcome(dump(VALID)[:cut])
        assert isinstance(result, ConfigError) and f"{FILE} is not valid JSON" in str(result), (damage, result)
