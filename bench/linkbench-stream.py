#!/usr/bin/env python3
"""Canonical LinkBench statement streams from a MariaDB general log dump, for bench/vs-linkbench.

Input (stdin): lines "thread_id<TAB>HEX(argument)" of Query/Execute entries. Output: one line
per statement, per connection (the read-write one first, then the read-only one): the
statement kind, then its numbers and payloads in order, clock values (10-13 digits) masked,
payloads as hex. Multi-statement strings are split at ';' and COMMITs are dropped, so the
reference's text SQL and dbperf's prepared statements compare equal when they do the same.
"""
import re
import sys

TABLES = ("linktable", "counttable", "nodetable")


def literals(sql: bytes):
    """Splits SQL into (text with literals replaced by \x00N\x00, [payload bytes])."""
    out, vals, i = bytearray(), [], 0
    while i < len(sql):
        c = sql[i]
        if sql[i:i + 2].lower() == b"x'":
            j = sql.index(b"'", i + 2)
            vals.append(bytes.fromhex(sql[i + 2:j].decode()))
            out += b" \x00%d\x00 " % (len(vals) - 1)
            i = j + 1
        elif c == 0x27:
            j, buf = i + 1, bytearray()
            esc = {ord("0"): 0, ord("b"): 8, ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("Z"): 26}
            while sql[j] != 0x27:
                if sql[j] == 0x5C and sql[j + 1:j + 2] == b"x" and re.match(rb"[0-9A-Fa-f]{2}", sql[j + 2:j + 4]):
                    # MariaDB logs bytes above 127 of an Execute's parameters as \xHH.
                    buf.append(int(sql[j + 2:j + 4], 16))
                    j += 3
                elif sql[j] == 0x5C:
                    j += 1
                    buf.append(esc.get(sql[j], sql[j]))
                else:
                    buf.append(sql[j])
                j += 1
            vals.append(bytes(buf))
            out += b" \x00%d\x00 " % (len(vals) - 1)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return out.decode("latin-1"), vals


def canon(stmt: bytes):
    text, vals = literals(stmt)
    low = re.sub(r"\s+", " ", text.replace("`", "").lower()).strip()
    low = re.sub(r"\b\w+\.(linktable|counttable|nodetable)\b", r"\1", low)
    # dbperf's own check that the tables exist is not part of the workload.
    if not any(t in low for t in TABLES) or low.startswith(("create", "drop", "show", "set", "select 1 from")):
        return None
    words = re.findall(r"[a-z_]+", low)
    table = next(t for t in words if t in TABLES)
    kind = words[0] + ":" + table
    if "for update" in low:
        kind += ":lock"
    elif kind == "insert:counttable":
        kind += ":dec" if " if" in low or "if(" in low else ":inc"
    elif kind == "update:linktable" and "data" not in low:
        kind += ":hide"
    toks = []
    for m in re.finditer(r"\x00(\d+)\x00|(?<![\w.])(\d+)(?![\w.])", low):
        if m.group(1) is not None:
            toks.append(vals[int(m.group(1))].hex())
        else:
            n = m.group(2)
            toks.append("T" if 10 <= len(n) <= 13 else n)
    return kind + " " + " ".join(toks)


def main():
    threads = {}
    for line in sys.stdin.buffer:
        line = line.rstrip(b"\n")
        if b"\t" not in line:
            continue
        tid, hx = line.split(b"\t", 1)
        sql = bytes.fromhex(hx.decode())
        # The reference appends "; commit;" to its last statement; payloads are hex then.
        part = re.sub(rb";?\s*(commit\s*;?\s*)?$", b"", sql.strip(), flags=re.I)
        if not part or part.lower() in (b"commit", b"rollback"):
            continue
        c = canon(part)
        if c:
            threads.setdefault(int(tid), []).append(c)
    rw = [t for t, s in threads.items() if any(x.split()[0].startswith(("insert", "update", "delete")) or ":lock" in x for x in s)]
    ro = [t for t in threads if t not in rw]
    for t in sorted(rw) + sorted(ro):
        print("== " + ("rw" if t in rw else "ro"))
        for s in threads[t]:
            print(s)


main()
