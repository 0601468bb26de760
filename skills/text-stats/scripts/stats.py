#!/usr/bin/env python3
"""stats.py - text statistics: lines, words, characters, CJK characters,
sentences, paragraphs, top words and estimated reading time.

    stats.py FILE [--top N] [--keep-stopwords] [--max-bytes N]
    stats.py -            (read the text from stdin)

Prints one JSON object on stdout. Exit 2 on bad input.
"""

import argparse
import json
import re
import sys
import unicodedata
from collections import Counter

WPM = 238          # silent reading, English-like words per minute
CJK_CPM = 300      # Chinese/Japanese characters per minute
DEFAULT_MAX = 20 * 1024 * 1024

# Han ideographs (incl. extension A and compatibility), Hiragana, Katakana,
# Hangul syllables. Each such character counts as one "word" for reading time.
CJK_RE = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u309f\u30a0-\u30ff"
                    "\uac00-\ud7af\U00020000-\U0002a6df]")
WORD_RE = re.compile(r"[^\W\d_](?:[\w'\u2019-]*\w)?|\d+(?:[.,]\d+)*", re.UNICODE)
SENTENCE_END_RE = re.compile(r"[.!?\u2026]+(?=[\s\"'\u201d\u2019)\]]|$)|[\u3002\uff01\uff1f]+")
PARA_RE = re.compile(r"\n[ \t]*\n")
STOPWORDS = set("""a an and are as at be been but by can could did do does for from had has have he
her his i if in into is it its just me my no not of on or our she so than that the their them
then there these they this to too was we were what when which who will with would you your
le la les de des du un une et est en que qui dans pour pas sur au aux der die das und ist nicht
el los las y es por con para""".split())


def die(msg):
    sys.stderr.write("stats.py: error: %s\n" % msg)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die("%s (usage: stats.py FILE | stats.py - [--top N])" % message)


def read_input(path, max_bytes):
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with open(path, "rb") as f:
                raw = f.read(max_bytes + 1)
    except IsADirectoryError:
        die("%s is a directory, expected a text file" % path)
    except FileNotFoundError:
        die("file not found: %s (relative paths start in the skill directory)" % path)
    except OSError as e:
        die("cannot read %s: %s" % (path, e.strerror or e))
    truncated = len(raw) > max_bytes
    raw = raw[:max_bytes]
    if b"\x00" in raw[:8192]:
        die("input looks binary (NUL bytes); stats.py handles UTF-8 text only")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    text = raw.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
    return text, len(raw), truncated, bad


def main(argv):
    ap = Parser(description="Text statistics for a UTF-8 file or stdin.")
    ap.add_argument("file", help='path to a UTF-8 text file, or "-" for stdin')
    ap.add_argument("--top", type=int, default=10, help="top words to list (default 10, max 50)")
    ap.add_argument("--keep-stopwords", action="store_true", help="do not drop common words from top_words")
    ap.add_argument("--max-bytes", type=int, default=DEFAULT_MAX, help="read at most N bytes (default 20 MiB)")
    a = ap.parse_args(argv)
    if not 0 <= a.top <= 50:
        die("--top must be between 0 and 50")
    if a.max_bytes < 1:
        die("--max-bytes must be >= 1")

    text, nbytes, truncated, bad = read_input(a.file, a.max_bytes)
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))

    cjk = CJK_RE.findall(text)
    non_cjk = CJK_RE.sub(" ", text)
    words = WORD_RE.findall(non_cjk)
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    sentences = len(SENTENCE_END_RE.findall(text))
    if sentences == 0 and (words or cjk):
        sentences = 1  # a fragment without final punctuation
    paragraphs = len([p for p in PARA_RE.split(text) if p.strip()])

    counts = Counter(w.lower() for w in words if not w[0].isdigit())
    if not a.keep_stopwords:
        for sw in STOPWORDS:
            counts.pop(sw, None)
    top = [[w, c] for w, c in counts.most_common(a.top)]

    word_units = len(words) + len(cjk)
    minutes = len(words) / WPM + len(cjk) / CJK_CPM
    chars = len(text)
    out = {
        "source": "stdin" if a.file == "-" else a.file,
        "bytes": nbytes,
        "chars": chars,
        "chars_no_spaces": sum(1 for ch in text if not ch.isspace()),
        "lines": lines,
        "blank_lines": sum(1 for ln in text.split("\n")[:lines] if not ln.strip()),
        "paragraphs": paragraphs,
        "words": len(words),
        "cjk_chars": len(cjk),
        "sentences": sentences,
        "avg_words_per_sentence": round(word_units / sentences, 1) if sentences else 0,
        "avg_word_length": round(sum(len(w) for w in words) / len(words), 2) if words else 0,
        "unique_words": len(set(w.lower() for w in words)),
        "reading_time_min": round(minutes, 1),
        "reading_time": "%d min %02d s" % divmod(int(round(minutes * 60)), 60),
        "top_words": top,
    }
    if cjk:
        out["top_cjk_chars"] = [[ch, c] for ch, c in Counter(cjk).most_common(min(a.top, 10))]
    if truncated:
        out["truncated"] = True
        out["note"] = "input larger than --max-bytes %d; statistics cover the first part only" % a.max_bytes
    if bad:
        out["invalid_utf8_sequences"] = bad
    json.dump(out, sys.stdout, ensure_ascii=False, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
