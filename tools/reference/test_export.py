"""export_safetensors's labels: written into the file's config, checked as the loader checks them.

    /usr/bin/python3 tools/reference/test_export.py            the checks (needs torch)
    /usr/bin/python3 tools/reference/test_export.py --write DIR
        writes DIR/good.safetensors (labels through export_safetensors), DIR/bad-<i>.safetensors
        (each bad labels case written without the check) and DIR/cases.json; tests/js/
        export-labels.test.js loads them with the runtime, so the exporter and the loader are seen
        to agree on every case.
"""
import json
import os
import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from export import export_safetensors, load_safetensors, with_labels  # noqa: E402
from sensorformer_ref import INV_FREQ, SensorformerRef  # noqa: E402
from st_io import read_safetensors, write_safetensors  # noqa: E402

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "tests/fixtures/model/factorized.safetensors"  # n_outputs 3
GOOD = ["rest", "walk", "run"]
# (labels, what the message must say): each is refused by src/model/config.cpp too.
BAD = [
    (["rest", "walk"], "got 2 entries"),
    (["rest", "walk", "run", "swim"], "got 4 entries"),
    (["rest", "rest", "run"], "'rest' is listed twice"),
    (["rest", "", "run"], "entry 1 is ''"),
    (["rest", 3, "run"], "entry 1 is 3"),
    (["rest", "walk", "\u20ac" * 86], "entry 2 is"),  # 258 UTF-8 bytes, 86 characters
    ("rwr", "got str"),
]


def model_and_config():
    config, model = load_safetensors(FIXTURE)
    assert config["n_outputs"] == 3 and "labels" not in config
    return config, model


class LabelsTest(unittest.TestCase):
    def test_labels_are_written_and_the_config_passed_in_is_unchanged(self):
        config, model = model_and_config()
        before = json.dumps(config)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.safetensors")
            export_safetensors(model, config, path, labels=tuple(GOOD))
            meta, tensors = read_safetensors(path)
            written = json.loads(meta["config"])
        self.assertEqual(written["labels"], GOOD)
        self.assertEqual({k: v for k, v in written.items() if k != "labels"}, config)
        self.assertEqual(json.dumps(config), before)
        self.assertIn(INV_FREQ, tensors)

    def test_without_labels_the_config_is_written_as_given(self):
        config, model = model_and_config()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.safetensors")
            export_safetensors(model, config, path)
            self.assertEqual(json.loads(read_safetensors(path)[0]["config"]), config)

    def test_256_bytes_is_the_longest_name(self):
        config, _ = model_and_config()
        longest = "\u20ac" * 85 + "a"  # 256 UTF-8 bytes
        self.assertEqual(with_labels(config, ["rest", "walk", longest])["labels"][2], longest)

    def test_bad_labels_are_refused_with_what_is_wrong(self):
        config, model = model_and_config()
        for labels, message in BAD:
            with self.subTest(labels=labels), tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "m.safetensors")
                with self.assertRaises(ValueError) as e:
                    export_safetensors(model, config, path, labels=labels)
                self.assertIn(message, str(e.exception))
                self.assertIn("labels must be a list of 3 distinct names of 1 to 256 UTF-8 bytes", str(e.exception))
                self.assertFalse(os.path.exists(path), "a refused export left a file")

    def test_labels_in_the_config_are_checked_too(self):
        config, model = model_and_config()
        with self.assertRaisesRegex(ValueError, "listed twice"):
            export_safetensors(model, {**config, "labels": ["a", "a", "b"]}, os.devnull)
        with self.assertRaisesRegex(ValueError, "differ"):
            with_labels({**config, "labels": GOOD}, ["a", "b", "c"])
        self.assertEqual(with_labels({**config, "labels": GOOD}, GOOD)["labels"], GOOD)

    def test_a_model_without_a_head_takes_no_labels(self):
        config = json.loads(read_safetensors(FIXTURE.with_name("flattened.safetensors"))[0]["config"])
        self.assertEqual(config.get("n_outputs", 0), 0)
        with self.assertRaisesRegex(ValueError, "n_outputs is 0"):
            with_labels(config, ["a"])


def write_cases(out):
    """Files for the runtime: one exported with labels, and each BAD case without the exporter's check."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config, model = model_and_config()
    export_safetensors(model, config, out / "good.safetensors", labels=GOOD)
    meta, tensors, dtypes = read_safetensors(out / "good.safetensors", with_dtypes=True)
    cases = [{"file": "good.safetensors", "labels": GOOD}]
    for i, (labels, _) in enumerate(BAD):
        try:
            with_labels(config, labels)
            refused = None
        except ValueError as e:
            refused = str(e)
        name = f"bad-{i}.safetensors"
        write_safetensors(out / name, [(k, dtypes[k], v) for k, v in tensors.items()],
                          {"config": json.dumps({**config, "labels": labels})})
        cases.append({"file": name, "labels": labels, "exporter": refused})
    (out / "cases.json").write_text(json.dumps(cases, ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        write_cases(sys.argv[2])
    else:
        unittest.main()
