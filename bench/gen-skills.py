#!/usr/bin/env python3
"""gen-skills.py N DIR - a deterministic skill library for the scale benchmark.

Writes N skills under DIR (created; an existing DIR with the same stamp is
left alone, any other existing DIR is refused unless it holds only a stamp of
ours). Every skill is derived from a seed of its own index, so the first 2,000
skills of the 5,000 library are the 2,000 library, and two runs write the same
bytes.

Each skill has:
  - frontmatter: name (= folder name), a folded description of 20-60 words
    drawn from common English and one or two domain vocabularies (so a
    domain query hits roughly 5-15 % of the library, like a real one), tags
    (2-4 from its domains), version, and sometimes license / execution;
  - a body of 3-6 sections (headings, prose, a list, a code block);
  - for ~30 % of skills a scripts/ folder (one or two scripts) and a
    references/ folder (one or two Markdown files);
  - ~10 % of skills live one level down, under one of 12 team folders.

Runs in about 30 s for 50,000 skills (python3 stdlib only; ~700 MB of small files).
"""
import os
import random
import sys

SEED = "skill-mcp-bench-v1"

DOMAINS = {
    "data": "csv tsv spreadsheet column row table schema parquet dataframe profile null "
            "distinct aggregate pivot join dedupe clean import export".split(),
    "api": "http rest endpoint request response json header token retry timeout "
           "pagination webhook graphql status rate-limit client".split(),
    "git": "git commit branch merge rebase diff patch repository history blame tag "
           "review pull-request conflict changelog".split(),
    "cloud": "kubernetes pod deployment cluster container docker helm terraform aws "
             "bucket region node ingress autoscaling".split(),
    "db": "sql postgres mysql sqlite query index migration transaction replica "
          "backup vacuum schema foreign-key deadlock".split(),
    "security": "vulnerability cve secret credential audit scan tls certificate "
                "permission sandbox injection policy compliance".split(),
    "docs": "markdown documentation readme outline heading summary glossary style "
            "guide changelog reference tutorial diagram".split(),
    "test": "test unit integration fixture mock coverage flaky assertion regression "
            "benchmark fuzz snapshot harness".split(),
    "ml": "model training dataset embedding inference tokenizer evaluation metric "
          "prompt fine-tune gpu checkpoint vector".split(),
    "web": "html css javascript browser dom accessibility lighthouse bundle react "
           "component layout responsive seo".split(),
    "logs": "log trace metric alert dashboard latency error incident grafana "
            "prometheus span sampling retention".split(),
    "pdf": "pdf document page extract ocr form scan image text layout merge split "
           "annotation".split(),
    "email": "email inbox message thread reply attachment smtp imap calendar invite "
             "schedule meeting reminder".split(),
    "finance": "invoice payment ledger budget expense tax currency report forecast "
               "reconcile receipt accounting".split(),
    "shell": "bash shell script cron process signal pipe file directory permission "
             "environment variable path".split(),
    "i18n": "translation locale language unicode encoding utf-8 plural format date "
            "timezone currency string".split(),
    "image": "image resize crop thumbnail png jpeg svg color palette compress "
             "metadata exif screenshot".split(),
    "audio": "audio transcribe speech podcast subtitle waveform mp3 noise volume "
             "speaker caption recording".split(),
    "chat": "slack channel notification bot mention message summary digest thread "
            "emoji webhook standup".split(),
    "search": "search rank relevance query keyword index fuzzy synonym stemming "
              "filter facet snippet".split(),
}

COMMON = ("use this skill when you need to quickly check review find fix build run "
          "compare generate convert summarise validate inspect analyse prepare update "
          "create list read write report explain clean the a an of for with from into "
          "and or any each every your its their large small many several files folder "
          "project team output input result results format options step steps safely "
          "without before after while locally remote existing new common typical "
          "problems errors issues changes details overview data quality structure "
          "content task tasks workflow automation helper tool command commands simple "
          "fast reliable accurate readable compact short long plain rich").split()

VERBS = ("check review find fix build run compare generate convert summarise validate "
         "inspect analyse prepare update create list read write clean sync fetch "
         "export import lint format plan").split()

TEAMS = ["team-%s" % t for t in ("platform payments growth search infra mobile web "
                                "data security support research ops").split()]

BODY_WORDS = COMMON + "because then first next finally also note that this those".split()


def sentence(rng, words, n):
    s = " ".join(rng.choice(words) for _ in range(n))
    return s[0].upper() + s[1:] + "."


def wrap(text, width=76, indent="  "):
    lines, cur = [], ""
    for w in text.split():
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(indent + cur)
            cur = w
        else:
            cur = cur + " " + w if cur else w
    if cur:
        lines.append(indent + cur)
    return "\n".join(lines)


def skill(i):
    rng = random.Random("%s/%d" % (SEED, i))
    doms = rng.sample(sorted(DOMAINS), 2)
    primary, secondary = DOMAINS[doms[0]], DOMAINS[doms[1]]
    noun = rng.choice(primary).replace("_", "-")
    name = "%s-%s-%05d" % (rng.choice(VERBS), noun, i)
    name = "-".join(p for p in name.split("-") if p)   # no '--'
    nwords = rng.randint(20, 60)
    words = []
    for _ in range(nwords):
        r = rng.random()
        words.append(rng.choice(primary) if r < 0.22 else
                     rng.choice(secondary) if r < 0.30 else rng.choice(COMMON))
    desc = " ".join(words)
    desc = desc[0].upper() + desc[1:] + "."
    tags = [doms[0]] + rng.sample(primary, rng.randint(1, 2))
    if rng.random() < 0.4:
        tags.append(doms[1])
    version = "%d.%d.%d" % (rng.randint(0, 3), rng.randint(0, 12), rng.randint(0, 20))
    extras = rng.random() < 0.30
    team = rng.choice(TEAMS) if rng.random() < 0.10 else None

    fm = ["---", "name: %s" % name, "description: >-", wrap(desc),
          "tags: [%s]" % ", ".join(tags), 'version: "%s"' % version]
    if rng.random() < 0.5:
        fm.append("license: MIT")
    scripts = []
    refs = []
    if extras:
        scripts = rng.sample(["run.py", "check.sh", "report.py", "fetch.sh"], rng.randint(1, 2))
        refs = rng.sample(["guide.md", "api.md", "faq.md", "troubleshooting.md"],
                          rng.randint(1, 2))
        fm += ["execution:", "  default: {timeout: 30, stall_timeout: 20}"]
        for s in scripts:
            fm += ["  scripts/%s:" % s, "    description: %s" % sentence(rng, COMMON, 6),
                   "    timeout: %d" % rng.choice((10, 30, 60))]
    fm.append("---")

    body = ["", "# %s" % name.replace("-", " ").title(), "", sentence(rng, BODY_WORDS, 18), ""]
    titles = ["When to use", "Steps", "Examples", "Output", "Pitfalls", "Notes"]
    for t in titles[:rng.randint(3, 6)]:
        body += ["## %s" % t, ""]
        if t == "Steps":
            body += ["%d. %s" % (k + 1, sentence(rng, BODY_WORDS + primary, 10))
                     for k in range(rng.randint(3, 6))]
        elif t == "Examples":
            body += ["```sh", "%s --input data/%s.txt --format json" %
                     (("scripts/" + scripts[0]) if scripts else name, noun), "```"]
        else:
            for _ in range(rng.randint(1, 3)):
                body.append(" ".join(sentence(rng, BODY_WORDS + primary, rng.randint(8, 16))
                                     for _ in range(rng.randint(2, 4))))
                body.append("")
        body.append("")
    if refs:
        body += ["See %s." % ", ".join("references/" + r for r in refs), ""]
    files = {"SKILL.md": "\n".join(fm + body)}
    for s in scripts:
        if s.endswith(".py"):
            files["scripts/" + s] = ("#!/usr/bin/env python3\n\"\"\"%s\"\"\"\nimport sys\n"
                                     "print('ok', sys.argv[1:])\n" % sentence(rng, COMMON, 8))
        else:
            files["scripts/" + s] = "#!/bin/sh\n# %s\necho ok \"$@\"\n" % sentence(rng, COMMON, 8)
    for r in refs:
        files["references/" + r] = "# %s\n\n%s\n" % (r[:-3].title(), "\n\n".join(
            sentence(rng, BODY_WORDS + primary, rng.randint(10, 25)) for _ in range(rng.randint(3, 8))))
    return team, name, files


def main():
    if len(sys.argv) != 3 or not sys.argv[1].isdigit():
        sys.exit("usage: gen-skills.py N DIR")
    n, out = int(sys.argv[1]), sys.argv[2]
    stamp_path = os.path.join(out, ".gen-skills")
    stamp = "%s n=%d\n" % (SEED, n)
    if os.path.isdir(out):
        try:
            with open(stamp_path) as f:
                if f.read() == stamp:
                    return
        except OSError:
            pass
        if os.listdir(out):
            sys.exit("gen-skills.py: %s exists and was not written by this generator for "
                     "N=%d; remove it first" % (out, n))
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        team, name, files = skill(i)
        base = os.path.join(out, team, name) if team else os.path.join(out, name)
        for rel, text in files.items():
            p = os.path.join(base, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
            if rel.startswith("scripts/"):
                os.chmod(p, 0o755)
    with open(stamp_path, "w") as f:
        f.write(stamp)


if __name__ == "__main__":
    main()
