"""The Redis layout of a mirrored source: key names, entry fields and the server-side scripts.

Everything another language needs to follow a source is here and in ``docs/fleet.md``:

- ``{prefix}:{source}:frames`` — a stream; each entry has ``seq`` (a decimal integer, one more
  than the previous entry's) and ``frame`` (one frame in the wire format, JSON text).
- ``{prefix}:{source}:checkpoint`` — a hash: ``frame`` (a snapshot frame), ``seq`` and ``id`` (the
  stream entry the snapshot corresponds to: it already includes that entry and every one before).
- ``{prefix}:{source}:owner`` — a hash: ``epoch`` (the owning mirror's fencing token),
  ``claimed`` (its claim order: server microseconds, strictly increasing), ``seq`` and ``last``
  (the last entry's sequence number and id), ``batch`` (the id of the batch that appended it).
- ``{prefix}:sources`` — a sorted set: each source, scored by the server time (milliseconds) its
  mirror last refreshed it.

The scripts run atomically on the server: that is what makes the fencing hold across machines
(SPEC N3) and the checkpoint consistent with its entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, final

import attrs

from .._contract import ContractError

if TYPE_CHECKING:
    import coredis

__all__ = [
    "APPEND_SCRIPT",
    "CLAIM_SCRIPT",
    "DEFAULT_PREFIX",
    "ServerScript",
    "SourceKeys",
    "check_name",
    "source_keys",
    "sources_key",
]

DEFAULT_PREFIX = "workflow-hub"


@attrs.frozen
class SourceKeys:
    """The key names of one source."""

    frames: str
    checkpoint: str
    owner: str
    sources: str


def check_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ContractError(field, f"expected a non-empty str, got {value!r}")
    return value


def source_keys(prefix: str, source: str) -> SourceKeys:
    return SourceKeys(
        frames=f"{prefix}:{source}:frames",
        checkpoint=f"{prefix}:{source}:checkpoint",
        owner=f"{prefix}:{source}:owner",
        sources=f"{prefix}:sources",
    )


def sources_key(prefix: str) -> str:
    return f"{prefix}:sources"


# Numbers are formatted with %.0f: Lua 5.1 numbers are doubles and tostring() would print a
# microsecond timestamp in exponent notation.

CLAIM_SCRIPT = """
-- KEYS: owner. ARGV: epoch, claimed ('' for a fresh claim), seq, last.
-- A fresh claim always wins (the newest instance, as register_publisher() in one process) and
-- gets a claim order above any before it. A reclaim after the owner key was lost (a Redis
-- restart without persistence) keeps the mirror's original order, and loses to a newer claim.
local now = redis.call('TIME')
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'claimed', 'seq', 'last')
local seq = tonumber(cur[3] or '0')
local last = cur[4] or ''
local claimed
if ARGV[2] == '' then
  claimed = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if cur[2] and tonumber(cur[2]) >= claimed then claimed = tonumber(cur[2]) + 1 end
else
  claimed = tonumber(ARGV[2])
  if cur[1] and cur[1] ~= ARGV[1] and tonumber(cur[2]) >= claimed then
    return {'fenced', cur[1]}
  end
  if tonumber(ARGV[3]) >= seq then
    seq = tonumber(ARGV[3])
    last = ARGV[4]
  end
end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'claimed', string.format('%.0f', claimed),
  'seq', string.format('%.0f', seq), 'last', last)
return {'ok', string.format('%.0f', claimed), string.format('%.0f', seq), last}
"""

APPEND_SCRIPT = """
-- KEYS: owner, frames, checkpoint, sources.
-- ARGV: epoch, claimed, base seq, maxlen, source, checkpoint frame ('' for none), batch id,
--       payloads...
-- Appends only while this mirror owns the source (the fencing check) and only on top of the
-- entry it appended last; a retried batch that the server had already applied (same batch id)
-- is not appended twice.
local owner = redis.call('HMGET', KEYS[1], 'epoch', 'claimed', 'seq', 'last', 'batch')
if not owner[1] then return {'lost'} end
if owner[1] ~= ARGV[1] then
  if tonumber(owner[2]) >= tonumber(ARGV[2]) then return {'fenced', owner[1]} end
  return {'lost'}
end
local seq = tonumber(owner[3])
local last = owner[4]
local base = tonumber(ARGV[3])
local count = #ARGV - 7
if seq ~= base then
  if count > 0 and seq == base + count and owner[5] == ARGV[7] then
    return {'ok', last, '0', 'duplicate'}
  end
  return {'lost'}
end
local id = '*'
if count > 0 and last ~= '' and redis.call('EXISTS', KEYS[2]) == 0 then
  -- The stream itself was lost: new ids must still sort after every id a follower has seen.
  local ms, n = string.match(last, '^(%d+)-(%d+)$')
  id = ms .. '-' .. string.format('%.0f', tonumber(n) + 1)
end
for i = 8, #ARGV do
  seq = seq + 1
  last = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], id,
    'seq', string.format('%.0f', seq), 'frame', ARGV[i])
  id = '*'
end
redis.call('HSET', KEYS[1], 'seq', string.format('%.0f', seq), 'last', last, 'batch', ARGV[7])
local now = redis.call('TIME')
redis.call('ZADD', KEYS[4],
  string.format('%.0f', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)), ARGV[5])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[3], 'seq', string.format('%.0f', seq), 'id', last, 'frame', ARGV[6])
end
-- A checkpoint is usable while every entry after it is still in the stream.
local stale = '0'
local cpseq = redis.call('HGET', KEYS[3], 'seq')
if not cpseq then
  stale = '1'
else
  local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
  if first[1] and tonumber(first[1][2][2]) > tonumber(cpseq) + 1 then stale = '1' end
end
return {'ok', last, stale, ''}
"""


@final
class ServerScript:
    """A Lua script run by its SHA, loaded again when the server has forgotten it (a restart).

    (coredis' own ``Script`` reloads with SCRIPT LOAD and retries; right after a restart we saw
    that retry fail with ``NoScriptError`` again, so this falls back to a plain EVAL.)
    """

    def __init__(self, source: str) -> None:
        self._source = source
        self._sha = hashlib.sha1(source.encode()).hexdigest()

    async def __call__(
        self, redis: coredis.Redis[Any], keys: Sequence[str], args: Sequence[str]
    ) -> object:
        from coredis.exceptions import NoScriptError

        try:
            return await redis.evalsha(self._sha, keys=keys, args=args)
        except NoScriptError:
            # EVAL runs it and caches it again (SCRIPT LOAD then EVALSHA did not always find it
            # cached right after a restart).
            return await redis.eval(self._source, keys=keys, args=args)
