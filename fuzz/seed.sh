#!/usr/bin/env bash
# Writes a small seed corpus for each fuzz target into fuzz/corpus/<target>/
# (git-ignored). Inputs follow the layouts the checks in src/invariants.rs
# expect: search_replace_parse takes `edit text \0 file text`, cascade takes
# `document \0 needle \0 hint`.
set -euo pipefail
cd "$(dirname "$0")"

sr=corpus/search_replace_parse
ca=corpus/cascade
mkdir -p "$sr" "$ca"

file=$'def f():\n    return 1\n\nclass A:\n    def g(self):\n        return \xe2\x80\x9chi\xe2\x80\x9d\n'

printf '%s' $'app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n' >"$sr/basic"
printf '%s\0%s' $'app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n' "$file" >"$sr/with_file"
printf '%s\0%s' $'```python\napp.py\n<<<<<<< SEARCH\n:start_line:5\ndef g(self):\n    return "hi"\n=======\ndef g(self):\n=======\n    return "bye"\n>>>>>>> REPLACE\n```\n' "$file" >"$sr/fenced_hint_divider"
printf '%s\0%s' $'a.py\n------- SEARCH\n\n=======\nnew\n+++++++ REPLACE\n' "" >"$sr/empty_search"
printf '%s\0%s' $'x\n<<<<<<< ORIGINAL\n1 | def f():\n2 |     return 1\n=======\ndef f(): pass\n>>>>>>> UPDATED\n' "$file" >"$sr/line_numbers"
printf '%s\0%s' $'x\n<<<<<<< SEARCH\nretur\n=======\nreturn\n>>>>>>> REPLACE\n' $'a\r\nreturn 1\r\nb' >"$sr/substring_crlf"

printf '%s\0%s\0%s' "$file" $'def g(self):\n    return "hi"' "" >"$ca/indent_unicode"
printf '%s\0%s\0%s' $'x\nfoo\nbar\ny\nfoo\nbar\n' $'foo\nbar' "4" >"$ca/hinted"
printf '%s\0%s\0%s' $'fn a() {  \n    x(1,  2);\n}\n' $'\nfn a() {\n    x(1, 2);\n}' "" >"$ca/whitespace"
body=""
for i in $(seq 0 39); do body+="let value_$i = compute($i, $((i * 3)));"$'\n'; done
printf '%s\0%s\0%s' "$body" $'let value_10 = compute(10, 30);\nlet valeu_11 = compute(11, 33);\nlet value_12 = compute(12, 36);' "" >"$ca/fuzzy"
printf '%s\0%s\0%s' $'\xef\xbb\xbfa\r\n\tb\r\n\n' $'  b' "1" >"$ca/bom_tab"
