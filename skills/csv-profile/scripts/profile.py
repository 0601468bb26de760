#!/usr/bin/env python3
"""profile.py - profile a CSV file: rows, columns, inferred types, nulls,
distinct counts, min/max and top values. Prints one JSON object on stdout.

    profile.py FILE [--max-rows N] [--delimiter C] [--top N] [--max-columns N]
               [--encoding ENC]

Exit codes: 0 ok, 2 bad arguments or unreadable/unparseable file.
"""

import argparse
import csv
import json
import os
import re
import sys
from collections import Counter
from datetime import datetime

NULLS = {"", "na", "n/a", "nan", "null", "none", "nil", "-", "#n/a"}
TRUE = {"true", "yes"}
FALSE = {"false", "no"}
INT_RE = re.compile(r"^[+-]?\d{1,18}$")
FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d.%m.%Y")
DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
DISTINCT_CAP = 1000
SNIFF_BYTES = 64 * 1024
MAX_FIELD = 1 << 20


def die(msg):
    sys.stderr.write("profile.py: error: %s\n" % msg)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die("%s (usage: profile.py FILE [--max-rows N] [--delimiter C] [--top N])" % message)


def kind_of(v):
    """Return the narrowest type of a non-null cell value."""
    low = v.lower()
    if INT_RE.match(v):
        return "int"
    if FLOAT_RE.match(v) or low in ("inf", "-inf", "+inf"):
        return "float"
    if low in TRUE or low in FALSE:
        return "bool"
    if DATETIME_RE.match(v):
        try:
            datetime.fromisoformat(v.replace("Z", "+00:00"))
            return "date"
        except ValueError:
            pass
    if len(v) == 10:
        for fmt in DATE_FORMATS:
            try:
                datetime.strptime(v, fmt)
                return "date"
            except ValueError:
                pass
    return "string"


def to_value(v, t):
    if t == "int":
        return int(v)
    if t == "float":
        return float(v)
    if t == "date":
        if DATETIME_RE.match(v):
            return datetime.fromisoformat(v.replace("Z", "+00:00")).replace(tzinfo=None)
        for fmt in DATE_FORMATS:
            try:
                return datetime.strptime(v, fmt)
            except ValueError:
                pass
    return v


class Column:
    def __init__(self, name):
        self.name = name
        self.nulls = 0
        self.kinds = Counter()
        self.values = Counter()     # capped at DISTINCT_CAP distinct keys
        self.distinct_capped = False
        self.max_len = 0
        self.num_min = self.num_max = None
        self.num_sum = 0.0
        self.date_min = self.date_max = None
        self.date_min_s = self.date_max_s = None

    def add(self, v):
        s = v.strip()
        if s.lower() in NULLS:
            self.nulls += 1
            return
        k = kind_of(s)
        self.kinds[k] += 1
        self.max_len = max(self.max_len, len(s))
        if k in ("int", "float"):
            x = to_value(s, k)
            self.num_sum += x
            if self.num_min is None or x < self.num_min:
                self.num_min = x
            if self.num_max is None or x > self.num_max:
                self.num_max = x
        elif k == "date":
            d = to_value(s, k)
            if self.date_min is None or d < self.date_min:
                self.date_min, self.date_min_s = d, s
            if self.date_max is None or d > self.date_max:
                self.date_max, self.date_max_s = d, s
        if s in self.values or len(self.values) < DISTINCT_CAP:
            self.values[s] += 1
        else:
            self.distinct_capped = True

    def infer(self):
        k = set(self.kinds)
        if not k:
            return "empty"
        if k == {"int"}:
            return "int"
        if k <= {"int", "float"}:
            return "float"
        if k == {"bool"}:
            return "bool"
        if k == {"date"}:
            return "date"
        return "string"

    def summary(self, rows, top_n):
        t = self.infer()
        non_null = sum(self.kinds.values())
        out = {"name": self.name, "type": t, "nulls": self.nulls,
               "null_pct": round(100.0 * self.nulls / rows, 1) if rows else 0.0,
               "distinct": ("%d+" % DISTINCT_CAP) if self.distinct_capped else len(self.values)}
        if t == "string" and len(self.kinds) > 1:
            out["mixed_types"] = dict(self.kinds.most_common())
            main, n = self.kinds.most_common(1)[0]
            if main != "string":
                out["note"] = "%d of %d values are %s; the others make it a string column" % (
                    n, non_null, main)
        if t in ("int", "float"):
            lo, hi = self.num_min, self.num_max
            out["min"], out["max"] = (float(lo), float(hi)) if t == "float" else (lo, hi)
            out["mean"] = round(self.num_sum / non_null, 4)
        elif t == "date":
            out["min"], out["max"] = self.date_min_s, self.date_max_s
        elif t == "string":
            out["max_length"] = self.max_len
        if t == "empty":
            return out
        top = self.values.most_common(top_n)
        if not self.distinct_capped and len(self.values) == non_null and non_null > top_n:
            out["all_unique"] = True
        elif self.distinct_capped and top and top[0][1] == 1:
            out["mostly_unique"] = True
        else:
            out["top"] = [[v if len(v) <= 40 else v[:37] + "...", c]
                          for v, c in top]
        return out


def read_text(path, encoding):
    try:
        with open(path, "rb") as f:
            raw = f.read(SNIFF_BYTES)
    except OSError as e:
        die("cannot read %s: %s" % (path, e.strerror or e))
    if b"\x00" in raw:
        die("%s looks binary (NUL bytes); is it really a CSV file? (UTF-16 files: convert to UTF-8)" % path)
    if encoding:
        try:
            raw.decode(encoding, errors="strict") if len(raw) < SNIFF_BYTES else raw[:-4].decode(encoding)
        except LookupError:
            die("unknown encoding %r" % encoding)
        except UnicodeDecodeError as e:
            die("file is not valid %s: %s" % (encoding, e))
        return encoding, raw
    for enc in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            (raw if len(raw) < SNIFF_BYTES else raw[:-4]).decode(enc)
            return enc, raw
        except UnicodeDecodeError:
            continue
    return "latin-1", raw


def main(argv):
    ap = Parser(description="Profile a CSV file.")
    ap.add_argument("file")
    ap.add_argument("--max-rows", type=int, default=100000, help="rows to scan (default 100000)")
    ap.add_argument("--delimiter", help="field delimiter (default: sniffed from , ; TAB |)")
    ap.add_argument("--top", type=int, default=3, help="top values per column (default 3, max 20)")
    ap.add_argument("--max-columns", type=int, default=50, help="columns to report (default 50)")
    ap.add_argument("--encoding", help="file encoding (default: utf-8, falling back to cp1252)")
    ap.add_argument("--no-header", action="store_true", help="first row is data; columns are named col1..N")
    a = ap.parse_args(argv)
    if a.max_rows < 1:
        die("--max-rows must be >= 1")
    if not 0 <= a.top <= 20:
        die("--top must be between 0 and 20")
    if a.max_columns < 1:
        die("--max-columns must be >= 1")
    if os.path.isdir(a.file):
        die("%s is a directory, expected a CSV file" % a.file)
    if not os.path.exists(a.file):
        die("file not found: %s (paths are relative to the skill directory; pass an absolute path)" % a.file)

    delim = a.delimiter
    if delim is not None:
        delim = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(delim, delim)
        if len(delim) != 1:
            die("--delimiter must be one character (use '\\t' or 'tab' for TAB), got %r" % a.delimiter)

    enc, sample_raw = read_text(a.file, a.encoding)
    sample = sample_raw.decode(enc, errors="replace")
    if not sample.strip():
        die("%s is empty" % a.file)
    sniffed = False
    if delim is None:
        try:
            delim = csv.Sniffer().sniff(sample[:16384], delimiters=",;\t|").delimiter
            sniffed = True
        except csv.Error:
            delim = ","

    csv.field_size_limit(MAX_FIELD)
    rows = 0
    ragged = 0
    truncated = False
    cols = []
    header = None
    try:
        with open(a.file, newline="", encoding=enc, errors="replace") as f:
            reader = csv.reader(f, delimiter=delim)
            for rec in reader:
                if header is None:
                    if a.no_header:
                        header = ["col%d" % (i + 1) for i in range(len(rec))]
                    else:
                        header = [h.strip() or "col%d" % (i + 1) for i, h in enumerate(rec)]
                        cols = [Column(h) for h in header]
                        continue
                    cols = [Column(h) for h in header]
                if not rec or (len(rec) == 1 and not rec[0].strip()):
                    continue  # blank line
                if rows >= a.max_rows:
                    truncated = True
                    break
                rows += 1
                if len(rec) != len(header):
                    ragged += 1
                for i, c in enumerate(cols):
                    c.add(rec[i] if i < len(rec) else "")
    except csv.Error as e:
        die("CSV parse error near data row %d: %s (try --delimiter)" % (rows + 1, e))
    except OSError as e:
        die("cannot read %s: %s" % (a.file, e))

    if header is None:
        die("%s has no rows" % a.file)
    out = {
        "file": os.path.basename(a.file),
        "encoding": enc.replace("-sig", ""),
        "delimiter": "\\t" if delim == "\t" else delim,
        "delimiter_sniffed": sniffed,
        "rows": rows,
        "rows_truncated": truncated,
        "column_count": len(cols),
        "columns": [c.summary(rows, a.top) for c in cols[:a.max_columns]],
    }
    if truncated:
        out["note"] = "stopped after --max-rows %d; counts cover the rows scanned" % a.max_rows
    if ragged:
        out["ragged_rows"] = ragged
    if len(cols) > a.max_columns:
        out["columns_omitted"] = len(cols) - a.max_columns
    if len(cols) == 1 and not a.delimiter and rows:
        out["warning"] = "only one column found; if that is wrong, pass --delimiter"
    json.dump(out, sys.stdout, ensure_ascii=False, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
