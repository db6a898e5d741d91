#!/bin/bash
# Health check for a MongoDB-wire server that needs no mongo shell, no Python
# and no extra binary: send a real OP_MSG {ping: 1, $db: "admin"} over bash's
# /dev/tcp and require an OP_MSG reply whose document says ok: 1. An open port
# alone is not enough; the server must parse a command and answer it.
set -euo pipefail
host=${1:-127.0.0.1}
port=${2:-27017}

exec 3<>"/dev/tcp/${host}/${port}"

# Header (length 51, requestID 1, responseTo 0, opCode 2013), flagBits 0,
# section kind 0, then the BSON document {ping: int32 1, $db: "admin"}.
printf '\x33\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xdd\x07\x00\x00'  >&3
printf '\x00\x00\x00\x00\x00'                                              >&3
printf '\x1e\x00\x00\x00\x10ping\x00\x01\x00\x00\x00'                      >&3
printf '\x02$db\x00\x06\x00\x00\x00admin\x00\x00'                          >&3

# dd with bs=1 reads exactly what is asked, so the length prefix can be used
# to read exactly one message without waiting for the server to close.
hex() { od -An -v -tx1 | tr -d ' \n'; }
len_hex=$(dd bs=1 count=4 status=none <&3 | hex)
len=$((16#${len_hex:6:2}${len_hex:4:2}${len_hex:2:2}${len_hex:0:2}))
if (( len < 21 || len > 1048576 )); then
    echo "unhealthy: bad reply length ${len}" >&2
    exit 1
fi
body=$(dd bs=1 count=$((len - 4)) status=none <&3 | hex)
exec 3>&-

# body starts at requestID; opCode is bytes 8..11 of it.
if [[ ${body:16:8} != "dd070000" ]]; then
    echo "unhealthy: reply is not OP_MSG" >&2
    exit 1
fi
# "ok" as double 1.0 or as int32 1.
if [[ $body == *016f6b00000000000000f03f* || $body == *106f6b0001000000* ]]; then
    exit 0
fi
echo "unhealthy: reply without ok: 1" >&2
exit 1
