"""Lua scripts of the Redis backend (each runs atomically on the server).

Every key a script touches shares the crawl's hash tag ``{crawl}``, so the
scripts also run on Redis Cluster (all of a crawl's keys live in one slot).
Stream entries carry one field, ``p``: the payload.
"""

from __future__ import annotations

__all__ = [
    "ACK",
    "CAS_TABLE",
    "CLAIM",
    "ENSURE_SETTINGS",
    "GET_TABLE",
    "INTEREST",
    "LEASE_CHECK",
    "LEAVE",
    "MEMBERS",
    "PENDING_TOTAL",
    "PUBLISH_ADDRESSES",
    "READ",
    "REQUEUE",
    "SEND",
    "TAKE_PERMITS",
    "TRY_LEASE",
]

SEND = """
-- KEYS: stream, ready set, bell; ARGV: group, payload, bucket
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
end
local id = redis.call('XADD', KEYS[1], '*', 'p', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
redis.call('XADD', KEYS[3], 'MAXLEN', '1', '*', 'b', ARGV[3])
return id
"""

READ = """
-- KEYS: ready set, bell, interest set; ARGV: group, consumer, max, stream key prefix, turn, ttl ms
-- The interest set holds the buckets the caller reads (content-addressed: its name is a hash
-- of the bucket list). Only buckets in both sets are read; one read dry is unflagged in the
-- same atomic step, so a concurrent SEND (which re-flags it) cannot be missed.
if redis.call('PEXPIRE', KEYS[3], ARGV[6]) == 0 then return {'', {}, 1} end
local out = {}
local left = tonumber(ARGV[3])
local candidates = redis.call('SINTER', KEYS[1], KEYS[3])
local n = #candidates
local offset = n > 0 and (tonumber(ARGV[5]) % n) or 0
for j = 1, n do
  if left <= 0 then break end
  local bucket = candidates[((j - 1 + offset) % n) + 1]
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', left, 'STREAMS', ARGV[4] .. bucket, '>')
  local entries = (r and r[1] and r[1][2]) or {}
  if #entries < left then redis.call('SREM', KEYS[1], bucket) end
  for _, e in ipairs(entries) do
    out[#out + 1] = bucket; out[#out + 1] = e[1]; out[#out + 1] = e[2][2]
  end
  left = left - #entries
end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local bell = (last[1] and last[1][1]) or '0-0'
return {bell, out, 0}
"""

INTEREST = """
-- KEYS: interest set; ARGV: ttl ms, buckets...  (idempotent: same list, same key, same content)
for i = 2, #ARGV, 1000 do
  redis.call('SADD', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

ACK = """
-- KEYS: stream; ARGV: group, ids...  (an entry is deleted once acked: the stream holds only unacked data)
local n = 0
for i = 2, #ARGV do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    redis.call('XDEL', KEYS[1], ARGV[i])
    n = n + 1
  end
end
return n
"""

PENDING_TOTAL = """
-- KEYS: stream of each bucket; entries not acked yet, summed here (one round trip, not one per bucket)
local n = 0
for i = 1, #KEYS do
  n = n + redis.call('XLEN', KEYS[i])
end
return n
"""

CLAIM = """
-- KEYS: stream of each bucket; ARGV: group, consumer, min idle ms, max, bucket of each stream
local out = {}
local left = tonumber(ARGV[4])
for i = 1, #KEYS do
  if left <= 0 then break end
  if redis.call('EXISTS', KEYS[i]) == 1 and redis.call('XPENDING', KEYS[i], ARGV[1])[1] > 0 then
    local start = '0-0'
    repeat
      local r = redis.call('XAUTOCLAIM', KEYS[i], ARGV[1], ARGV[2], ARGV[3], start, 'COUNT', left)
      start = r[1]
      for _, e in ipairs(r[2]) do
        if e then
          out[#out + 1] = ARGV[i + 4]; out[#out + 1] = e[1]; out[#out + 1] = e[2][2]
          left = left - 1
        end
      end
    until start == '0-0' or left <= 0
  end
end
return out
"""

REQUEUE = """
-- KEYS: stream of each bucket, then ready set, bell; ARGV: group, consumer, bucket of each stream
-- Every entry pending for the consumer (a dead reader) is sent again as SEND does and the old one
-- acked and deleted, in one atomic step: the payload is in the stream exactly once, readable by '>'.
local streams = #KEYS - 2
local n = 0
for i = 1, streams do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local moved = 0
    repeat
      local batch = redis.call('XPENDING', KEYS[i], ARGV[1], '-', '+', 1000, ARGV[2])
      for _, p in ipairs(batch) do
        local e = redis.call('XRANGE', KEYS[i], p[1], p[1])
        if e[1] then redis.call('XADD', KEYS[i], '*', 'p', e[1][2][2]) end
        redis.call('XACK', KEYS[i], ARGV[1], p[1])
        redis.call('XDEL', KEYS[i], p[1])
        moved = moved + 1
      end
    until #batch < 1000
    if moved > 0 then
      redis.call('SADD', KEYS[streams + 1], ARGV[i + 2])
      redis.call('XADD', KEYS[streams + 2], 'MAXLEN', '1', '*', 'b', ARGV[i + 2])
      n = n + moved
    end
  end
end
return n
"""

GET_TABLE = """
-- KEYS: table hash; ARGV: version the caller has ('' for none). Body only if it changed.
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return {} end
if v == ARGV[1] then return {v} end
return {v, redis.call('HGET', KEYS[1], 'body')}
"""

CAS_TABLE = """
-- KEYS: table hash; ARGV: expected version ('' = no table), new version, n_buckets, body
local v = redis.call('HGET', KEYS[1], 'version')
if (v or '') ~= ARGV[1] then return 0 end
local n = redis.call('HGET', KEYS[1], 'n_buckets')
if n and n ~= ARGV[3] then return -1 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'n_buckets', ARGV[3], 'body', ARGV[4])
return 1
"""

ENSURE_SETTINGS = """
-- KEYS: settings, definition; ARGV: settings JSON, defined. First writer wins; returns what is stored.
-- defined "1": the caller read the definition here; gone means Redis lost the crawl's data: nil, untouched.
if ARGV[2] == '1' and redis.call('EXISTS', KEYS[2]) == 0 then return false end
local cur = redis.call('GET', KEYS[1])
if cur then return cur end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
"""

MEMBERS = """
-- KEYS: member index set; ARGV: member key prefix. Drops index entries whose key expired.
local out = {}
for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local info = redis.call('GET', ARGV[1] .. node)
  if info then
    out[#out + 1] = node; out[#out + 1] = info
  else
    redis.call('SREM', KEYS[1], node)
  end
end
return out
"""

LEAVE = """
-- KEYS: member key, member index set, lease; ARGV: node
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
return 1
"""

LEASE_CHECK = """
-- KEYS: member key, table. The member key's remaining life in the server's time (ms; -2: gone)
-- and the table's version ('' if none): what a node's fence asks before its requests.
return {redis.call('PTTL', KEYS[1]), redis.call('HGET', KEYS[2], 'version') or ''}
"""

TRY_LEASE = """
-- KEYS: lease, settings; ARGV: node, ttl ms, guard. Free or expired: take it; ours: renew; else: no.
-- guard "1": the crawl was registered here; settings gone means Redis lost the crawl's data: -1, untouched.
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

PUBLISH_ADDRESSES = """
-- KEYS: address hash; ARGV: host1, address1, host2, address2, ...
-- HSETNX per host: the first answer published for a host is every node's answer.
local hosts = {}
for i = 1, #ARGV, 2 do
  redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
  hosts[#hosts + 1] = ARGV[i]
end
return redis.call('HMGET', KEYS[1], unpack(hosts))
"""

TAKE_PERMITS = """
-- KEYS: counters hash; ARGV: name, limit, n. Raise the counter by up to n, never past limit.
local have = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local take = math.min(tonumber(ARGV[3]), tonumber(ARGV[2]) - have)
if take <= 0 then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], take)
return take
"""
