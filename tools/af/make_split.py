#!/usr/bin/env python3
"""The fixed split of PhysioNet/CinC 2017 (issue 20): stratified by class, by record, seeded.

    python3 tools/af/make_split.py --data DIR [--out tools/af/split]

DIR is the challenge's training set (REFERENCE.csv and the Axxxxx.hea / .mat records; download it
from https://physionet.org/content/challenge-2017/). Writes record names only (no labels, no
signal), one per line, sorted:

    fold0.txt .. fold4.txt   a stratified partition into 5 folds (each class shuffled with the
                             seed, then dealt round robin), for 5-fold cross-validation
    test.txt                 fold 0: the test part (20 %) every reported score uses
    validation.txt           a stratified eighth of folds 1-4 (10 % of all): chooses the epoch
    train.txt                the rest of folds 1-4 (70 %)

Cross-validation run k tests on fold k and carves its validation part from the other four the
same way (validation_of(k) below; train_af.py calls it). Python's random.Random(seed) is the only
random source, so the same data and seed give the same files on any machine.
"""
import argparse
import csv
import os
import random
import sys

SEED = 2017
FOLDS = 5
CLASSES = ["N", "A", "O", "~"]


def read_labels(data):
    path = os.path.join(data, "REFERENCE.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if rows and rows[0][:2] == ["data_source", "class"]:
        rows = rows[1:]
    labels = {}
    for i, row in enumerate(rows, 2):
        if len(row) != 2 or row[1] not in CLASSES:
            sys.exit(f"{path} line {i}: expected 'record,class' with class in {CLASSES}, got {row}")
        labels[row[0]] = row[1]
    return labels


def stratified_deal(names, labels, parts, rng):
    """Each class's records shuffled, then dealt to `parts` round robin: class shares agree to 1."""
    out = [[] for _ in range(parts)]
    for c in CLASSES:
        members = sorted(n for n in names if labels[n] == c)
        rng.shuffle(members)
        for i, n in enumerate(members):
            out[i % parts].append(n)
    return [sorted(p) for p in out]


def folds_of(labels, seed=SEED):
    return stratified_deal(sorted(labels), labels, FOLDS, random.Random(seed))


def validation_of(k, folds, labels, seed=SEED):
    """(train, validation) for a run that tests on fold k: an eighth of the rest, stratified."""
    rest = sorted(n for j, f in enumerate(folds) if j != k for n in f)
    parts = stratified_deal(rest, labels, 8, random.Random(seed + 1 + k))
    return sorted(n for p in parts[1:] for n in p), parts[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the CinC 2017 training set folder (REFERENCE.csv)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "split"))
    args = ap.parse_args()
    labels = read_labels(args.data)
    missing = [n for n in labels if not os.path.exists(os.path.join(args.data, n + ".hea"))]
    if missing:
        sys.exit(f"{len(missing)} records of REFERENCE.csv have no .hea in {args.data} (first: {missing[0]})")
    folds = folds_of(labels)
    train, validation = validation_of(0, folds, labels)
    os.makedirs(args.out, exist_ok=True)

    def write(name, records):
        with open(os.path.join(args.out, name), "w") as f:
            f.write("".join(n + "\n" for n in records))

    for k, fold in enumerate(folds):
        write(f"fold{k}.txt", fold)
    write("test.txt", folds[0])
    write("validation.txt", validation)
    write("train.txt", train)
    for name, part in [("train", train), ("validation", validation), ("test", folds[0])]:
        counts = {c: sum(labels[n] == c for n in part) for c in CLASSES}
        print(f"{name:10s} {len(part):5d} records  " + "  ".join(f"{c} {counts[c]}" for c in CLASSES))


if __name__ == "__main__":
    main()
