#!/bin/sh
# This script was generated using Makeself 2.1.5

CRCsum="1612531478"
MD5="e02f357d6addf68924ad992a6aeaf780"
TMPROOT=${TMPDIR:=/tmp}

label="cuda-linux64-rel-9.0.176-22781540"
script="./install-linux.pl"
scriptargs=""
targetdir="pkg"
filesizes="157806"
keep=y

MS_Check()
{
    offset=`head -n 24 "$1" | wc -c | tr -d " "`
}
--list)
	offset=`head -n 24 "$0" | wc -c | tr -d " "`
	    MS_dd "$0" $offset $s | eval "gzip -cd" | UnTAR t
offset=`head -n 24 "$0" | wc -c | tr -d " "`
    if MS_dd "$0" $offset $s | eval "gzip -cd" | ( cd "$tmpdir"; UnTAR x ) | MS_Progress; then
eval $finish; exit $res
