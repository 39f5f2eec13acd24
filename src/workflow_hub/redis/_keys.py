"""The Redis layout of a mirrored source: key names, entry fields and the server-side scripts.

Everything another language needs to follow a source is here and in ``docs/fleet.md``:

- ``{prefix}:{source}:frames`` — a stream; each entry has ``seq`` (a decimal integer, one more
  than the previous entry's) and ``frame`` (one frame in the wire format, JSON text).
- ``{prefix}:{source}:checkpoint`` — a hash: ``frame`` (a snapshot frame), ``seq`` and ``id`` (the
  stream entry the snapshot corresponds to: it already includes that entry and every one before).
- ``{prefix}:{source}:owner`` — a hash: ``epoch`` (the owning mirror's fencing token),
  ``claimed`` (its claim order: server microseconds, strictly increasing), ``seq`` and ``last``
  (the last entry's sequence number and id), ``batch`` (the id of the batch that appended it);
  with hook events also ``events_epoch``, ``events_seq``, ``events_last`` and ``events_batch``
  (the same for the last event appended).
- ``{prefix}:{source}:events`` — a stream of the hub's hook events; each entry has ``epoch`` (the
  appending mirror's fencing token), ``seq`` (a decimal integer counting that mirror's events,
  from 1), ``lost`` (how many events right before this one the mirror dropped, usually ``0``) and
  ``event`` (one hook event in the wire format, JSON text).
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
    "DEFAULT_RETIRE_AFTER",
    "DISCOVER_SCRIPT",
    "EVENTS_APPEND_SCRIPT",
    "QUIET_MANY_SCRIPT",
    "QUIET_SCRIPT",
    "ServerScript",
    "SourceKeys",
    "check_name",
    "id_at_most",
    "source_keys",
    "sources_key",
]

DEFAULT_PREFIX = "workflow-hub"
"""The first part of every key a mirror writes and a follower reads (``workflow-hub:…``): fleets
that share one Redis are told apart by their prefix."""
DEFAULT_RETIRE_AFTER = 3600.0
"""Seconds after its last refresh when a source is retired: its keys expire, followers drop it."""


@attrs.frozen
class SourceKeys:
    """The key names of one source."""

    frames: str
    checkpoint: str
    owner: str
    sources: str
    events: str
    """The stream of the source's hook events."""


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
        events=f"{prefix}:{source}:events",
    )


def sources_key(prefix: str) -> str:
    return f"{prefix}:sources"


# Numbers are formatted with %.0f: Lua 5.1 numbers are doubles and tostring() would print a
# microsecond timestamp in exponent notation.

_LUA_HELPERS = """
-- The type of a key, or nil when it exists with a type other than the one expected.
local function wrong_type(key, expected)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'none' and kind ~= expected then return kind end
  return nil
end
-- The sequence number of a stream entry, nil for an entry some other writer added.
local function entry_seq(entry)
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'seq' then return tonumber(fields[i + 1]) end
  end
  return nil
end
-- a <= b for two stream ids.
local function id_at_most(a, b)
  local am, an = string.match(a, '^(%d+)-(%d+)$')
  local bm, bn = string.match(b, '^(%d+)-(%d+)$')
  if not am or not bm then return false end
  am, an, bm, bn = tonumber(am), tonumber(an), tonumber(bm), tonumber(bn)
  return am < bm or (am == bm and an <= bn)
end
local function now_ms()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
"""

CLAIM_SCRIPT = (
    _LUA_HELPERS
    + """
-- KEYS: owner. ARGV: epoch, claimed ('' for a fresh claim), seq, last.
-- A fresh claim always wins (the newest instance, as register_publisher() in one process) and
-- gets a claim order above any before it. A reclaim after the owner key was lost (a Redis
-- restart without persistence) keeps the mirror's original order, and loses to a newer claim.
local kind = wrong_type(KEYS[1], 'hash')
if kind then return {'wrongtype', KEYS[1], kind} end
local now = redis.call('TIME')
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'claimed', 'seq', 'last')
local seq = tonumber(cur[3] or '0') or 0
local last = cur[4] or ''
local claimed
if ARGV[2] == '' then
  claimed = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local before = tonumber(cur[2] or '')
  if before and before >= claimed then claimed = before + 1 end
else
  claimed = tonumber(ARGV[2])
  if cur[1] and cur[1] ~= ARGV[1] and (tonumber(cur[2] or '') or 0) >= claimed then
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
)

APPEND_SCRIPT = (
    _LUA_HELPERS
    + """
-- KEYS: owner, frames, checkpoint, sources, and (optional) events.
-- ARGV: epoch, claimed, base seq, maxlen, source, checkpoint frame ('' for none), batch id,
--       time to live (ms), payloads...
-- Appends only while this mirror owns the source (the fencing check) and only on top of the
-- entry it appended last; a retried batch that the server had already applied (same batch id)
-- is not appended twice. A key of the wrong type (written by something else) is reported
-- before anything is written: a script that fails halfway keeps what it wrote.
local expected = {'hash', 'stream', 'hash', 'zset'}
for i = 1, 4 do
  local kind = wrong_type(KEYS[i], expected[i])
  if kind then return {'wrongtype', KEYS[i], kind} end
end
local owner = redis.call('HMGET', KEYS[1], 'epoch', 'claimed', 'seq', 'last', 'batch')
if not owner[1] then return {'lost'} end
if owner[1] ~= ARGV[1] then
  if (tonumber(owner[2] or '') or 0) >= tonumber(ARGV[2]) then return {'fenced', owner[1]} end
  return {'lost'}
end
local seq = tonumber(owner[3] or '')
local last = owner[4] or ''
local base = tonumber(ARGV[3])
local count = #ARGV - 8
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
for i = 9, #ARGV do
  seq = seq + 1
  last = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], id,
    'seq', string.format('%.0f', seq), 'frame', ARGV[i])
  id = '*'
end
redis.call('HSET', KEYS[1], 'seq', string.format('%.0f', seq), 'last', last, 'batch', ARGV[7])
redis.call('ZADD', KEYS[4], string.format('%.0f', now_ms()), ARGV[5])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[3], 'seq', string.format('%.0f', seq), 'id', last, 'frame', ARGV[6])
end
-- Alive: the source's keys live for another retirement time (the registry is a shared key and
-- never expires; followers remove the sources that stopped refreshing from it).
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[8]) end
if KEYS[5] then redis.call('PEXPIRE', KEYS[5], ARGV[8]) end
-- A checkpoint is usable while every entry after it is still in the stream: the stream's first
-- entry is the checkpoint's own (or older), or the one right after it. Entries of other writers
-- carry no sequence number of ours and are compared by id only.
local stale = '0'
local cp = redis.call('HMGET', KEYS[3], 'seq', 'id')
local cpseq = tonumber(cp[1] or '')
if not cpseq or not cp[2] then
  stale = '1'
elseif seq > cpseq then
  local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1]
  if not first then
    stale = '1'
  elseif not id_at_most(first[1], cp[2]) and entry_seq(first) ~= cpseq + 1 then
    stale = '1'
  end
end
return {'ok', last, stale, ''}
"""
)

EVENTS_APPEND_SCRIPT = (
    _LUA_HELPERS
    + """
-- KEYS: owner, events. ARGV: epoch, claimed, maxlen, time to live (ms), batch id, then three
-- values per event: seq, lost, payload.
-- Appends only while this mirror owns the source: the fencing check of the frames, on the same
-- owner key, so an instance that lost the source can append neither frames nor events. A
-- retried batch that the server had already applied (same batch id) is not appended twice.
local kind = wrong_type(KEYS[1], 'hash')
if kind then return {'wrongtype', KEYS[1], kind} end
kind = wrong_type(KEYS[2], 'stream')
if kind then return {'wrongtype', KEYS[2], kind} end
local owner = redis.call('HMGET', KEYS[1], 'epoch', 'claimed', 'events_batch', 'events_last')
if not owner[1] then return {'lost'} end
if owner[1] ~= ARGV[1] then
  if (tonumber(owner[2] or '') or 0) >= tonumber(ARGV[2]) then return {'fenced', owner[1]} end
  return {'lost'}
end
if owner[3] == ARGV[5] then return {'ok', owner[4] or '', 'duplicate'} end
local last = ''
for i = 6, #ARGV, 3 do
  last = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*',
    'epoch', ARGV[1], 'seq', ARGV[i], 'lost', ARGV[i + 1], 'event', ARGV[i + 2])
end
-- Where the events stand, for a follower that finds the stream empty (trimmed or expired).
redis.call('HSET', KEYS[1], 'events_batch', ARGV[5], 'events_last', last,
  'events_epoch', ARGV[1], 'events_seq', ARGV[#ARGV - 2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {'ok', last, ''}
"""
)

QUIET_SCRIPT = (
    _LUA_HELPERS
    + """
-- KEYS: owner, frames. What a follower that read nothing new needs, read at one instant: the
-- owner's sequence number and the id of the stream's last entry ('' when there is none).
local kind = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'stream')
if kind then return {'wrongtype', kind} end
local seq = redis.call('HGET', KEYS[1], 'seq')
local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
return {'ok', seq or '', newest and newest[1] or ''}
"""
)

QUIET_MANY_SCRIPT = (
    _LUA_HELPERS
    + """
-- KEYS: owner and frames of each source, in pairs. The quiet check of many sources in one round
-- trip: for each pair, what QUIET_SCRIPT returns for one.
local out = {}
for i = 1, #KEYS, 2 do
  local kind = wrong_type(KEYS[i], 'hash') or wrong_type(KEYS[i + 1], 'stream')
  if kind then
    out[#out + 1] = {'wrongtype', kind}
  else
    local seq = redis.call('HGET', KEYS[i], 'seq')
    local newest = redis.call('XREVRANGE', KEYS[i + 1], '+', '-', 'COUNT', 1)[1]
    out[#out + 1] = {'ok', seq or '', newest and newest[1] or ''}
  end
end
return out
"""
)

DISCOVER_SCRIPT = (
    _LUA_HELPERS
    + """
-- KEYS: sources. ARGV: retirement time (ms). Retires the sources that have not refreshed for
-- that long, then returns the server time (ms) and every source with its last refresh.
local kind = wrong_type(KEYS[1], 'zset')
if kind then return {'wrongtype', kind} end
local now = now_ms()
local retired = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf',
  '(' .. string.format('%.0f', now - tonumber(ARGV[1])))
return {'ok', string.format('%.0f', now), redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'),
  retired}
"""
)


def id_at_most(a: str, b: str) -> bool:
    """``a <= b`` for two stream ids (``ms-n``)."""
    a_ms, _, a_n = a.partition("-")
    b_ms, _, b_n = b.partition("-")
    return (int(a_ms), int(a_n or 0)) <= (int(b_ms), int(b_n or 0))


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
