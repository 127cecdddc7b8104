#!/bin/sh
# check-history.sh -- fail when the user-facing text speaks of how the project was
# developed rather than of what it is: README.md, docs/*.md, and the comments of
# the C files under src/, include/ and examples/. History belongs in git log.
#
# Prints each hit as FILE:LINE: TEXT and exits 1 if there is any, else 0.
# Run from anywhere: paths are taken relative to the source tree.
set -u
cd "$(dirname "$0")/.." || exit 2

# Each pattern names one kind of diary wording (extended regex, matched without
# case). They are anchored on words or numbers so that ordinary prose passes:
# "an ssh session", "a tried-and-true path" and "issue a request" do not match.
patterns='
\bsessions? [0-9]+
\b(this|that|previous|next|last|earlier|later|same|one|each) sessions?\b
\bwork[ -]periods?\b
\bWP[ -]?[0-9]+\b
\bissues? #?[0-9]+
\bpreviously\b
\bwe (tried|reverted)\b
\b(tried|attempted) and (dropped|reverted|not kept)\b
\bearlier attempts?\b
\bsitting\b
\bkept for the record\b
\bcommits? [0-9a-f]{7,40}\b
\breverted in\b
\bseeds? 0[0-9]{2}\b
\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b
'
regex=$(printf '%s' "$patterns" | sed '/^$/d' | paste -sd '|' -)

# Comment text of C files as FILE:LINE: TEXT, one line of output per source line
# that has comment text. String and character literals are skipped, so an info
# string such as "ofi+tcp://..." does not open a comment.
c_comments() {
    awk '
    FNR == 1 { inc = 0 }
    {
        rest = $0; text = ""
        while (rest != "") {
            if (inc) {
                e = index(rest, "*/")
                if (e) { text = text " " substr(rest, 1, e - 1); rest = substr(rest, e + 2); inc = 0 }
                else { text = text " " rest; rest = "" }
                continue
            }
            if (match(rest, /"([^"\\]|\\.)*"|'\''([^'\''\\]|\\.)*'\''|\/\*|\/\//) == 0) break
            tok = substr(rest, RSTART, 2)
            if (tok == "/*") { inc = 1; rest = substr(rest, RSTART + 2) }
            else if (tok == "//") { text = text " " substr(rest, RSTART + 2); rest = "" }
            else rest = substr(rest, RSTART + RLENGTH)
        }
        if (text != "") print FILENAME ":" FNR ":" text
    }' "$@"
}

hits=$(mktemp "${TMPDIR:-/tmp}/check-history.XXXXXX") || exit 2
trap 'rm -f "$hits"' EXIT INT TERM
grep -nHiE "$regex" README.md docs/*.md >"$hits"
c_files=$(find src include examples -name '*.[ch]' | sort)
# shellcheck disable=SC2086 # one word per file name; the tree has no spaces in them
c_comments $c_files | grep -iE "$regex" >>"$hits"

if [ -s "$hits" ]; then
    echo "check-history: development history in user-facing text (put it in the commit message):"
    cat "$hits"
    echo "check-history: $(wc -l <"$hits") line(s)"
    exit 1
fi
echo "check-history: README.md, docs/ and the comments of src/, include/, examples/ are free of history"
exit 0
