package fsm

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// notifyCases are Redis's keyspace events for one command (or a few,
// separated by ";"), after a setup run with notifications off. They were
// captured from redis-server 7.0.15 with notify-keyspace-events KEAn and
// the active expiry cycle off (DEBUG SET-ACTIVE-EXPIRE 0), listing the
// __keyevent@0__ messages as event(key). Arguments: "\s" is a space,
// `""` an empty argument, "hex:…" bytes in hex; "SLEEPMS n" in a setup
// advances the clock. notifyDiffers lists where slotraft knowingly differs.
var notifyCases = []struct{ setup, cmds, want string }{
	{"", "SET k v", "new(k) set(k)"},
	{"SET k v", "SET k w", "set(k)"},
	{"", "SET k v EX 10", "new(k) set(k) expire(k)"},
	{"SET k v", "SET k w KEEPTTL", "set(k)"},
	{"SET k v NX", "SET k w NX", ""},
	{"SET k v", "SET k w XX GET", "set(k)"},
	{"SET k v", "SET k w GET", "set(k)"},
	{"SET k v", "SET k w PX 0", ""},
	{"", "SETNX k v", "new(k) set(k)"},
	{"", "SETEX k 10 v", "new(k) set(k) expire(k)"},
	{"", "PSETEX k 10000 v", "new(k) set(k) expire(k)"},
	{"", "MSET a 1 b 2", "new(a) set(a) new(b) set(b)"},
	{"", "MSETNX a 1 b 2", "new(a) set(a) new(b) set(b)"},
	{"SET a 1", "MSETNX a 1 b 2", ""},
	{"", "GETSET k v", "new(k) set(k)"},
	{"SET k v", "GETDEL k", "del(k)"},
	{"", "GETDEL k", ""},
	{"SET k v", "GETEX k EX 100", "expire(k)"},
	{"SET k v EX 100", "GETEX k PERSIST", "persist(k)"},
	{"SET k v", "GETEX k PERSIST", ""},
	{"SET k v", "GETEX k", ""},
	{"SET k v", "GETEX k PX 0", ""},
	{"SET k v", "GETEX k EXAT 1", "del(k)"},
	{"", "APPEND k v", "new(k) append(k)"},
	{"SET k v", "APPEND k w", "append(k)"},
	{"", "SETRANGE k 3 x", "new(k) setrange(k)"},
	{"", "SETRANGE k 0 \"\"", ""},
	{"SET k v", "SETRANGE k 0 \"\"", ""},
	{"", "INCR k", "new(k) incrby(k)"},
	{"", "INCRBY k 5", "new(k) incrby(k)"},
	{"", "DECR k", "new(k) incrby(k)"},
	{"", "DECRBY k 5", "new(k) incrby(k)"},
	{"", "INCRBYFLOAT k 1.5", "new(k) incrbyfloat(k)"},
	{"SET k abc", "INCR k", ""},
	{"", "SETBIT k 7 1", "new(k) setbit(k)"},
	{"SET k v", "SETBIT k 7 0", ""},
	{"", "BITFIELD k SET u8 0 255", "new(k) setbit(k)"},
	{"", "BITFIELD k GET u8 0", ""},
	{"SET k v", "BITFIELD k GET u8 0", ""},
	{"SET a 1; SET b 2", "BITOP AND d a b", "new(d) set(d)"},
	{"", "BITOP AND d a b", ""},
	{"SET d x", "BITOP AND d a b", "del(d)"},
	{"SET k v", "DEL k", "del(k)"},
	{"SET a v; SET b v", "DEL a b c", "del(a) del(b)"},
	{"", "DEL k", ""},
	{"SET k v", "UNLINK k", "del(k)"},
	{"SET k v", "EXPIRE k 100", "expire(k)"},
	{"SET k v", "PEXPIRE k 100000", "expire(k)"},
	{"SET k v", "EXPIREAT k 99999999999", "expire(k)"},
	{"SET k v", "EXPIRE k 0", "del(k)"},
	{"SET k v", "EXPIRE k -1", "del(k)"},
	{"SET k v", "PEXPIREAT k 1", "del(k)"},
	{"SET k v", "EXPIRE k 100 NX; EXPIRE k 200 NX", "expire(k)"},
	{"", "EXPIRE k 100", ""},
	{"SET k v EX 100", "PERSIST k", "persist(k)"},
	{"SET k v", "PERSIST k", ""},
	{"SET k v", "RENAME k j", "new(j) rename_from(k) rename_to(j)"},
	{"SET k v; SET j w", "RENAME k j", "new(j) rename_from(k) rename_to(j)"},
	{"SET k v", "RENAME k k", ""},
	{"SET k v", "RENAMENX k j", "new(j) rename_from(k) rename_to(j)"},
	{"SET k v; SET j w", "RENAMENX k j", ""},
	{"SET k v", "COPY k j", "new(j) copy_to(j)"},
	{"SET k v; SET j w", "COPY k j REPLACE", "new(j) copy_to(j)"},
	{"SET k v; SET j w", "COPY k j", ""},
	{"", "LPUSH k a b", "new(k) lpush(k)"},
	{"RPUSH k a", "LPUSH k b", "lpush(k)"},
	{"RPUSH k a", "RPUSH k b", "rpush(k)"},
	{"", "LPUSHX k a", ""},
	{"RPUSH k a", "LPUSHX k b", "lpush(k)"},
	{"RPUSH k a", "RPUSHX k b", "rpush(k)"},
	{"RPUSH k a", "RPOP k", "rpop(k) del(k)"},
	{"RPUSH k a b", "LPOP k", "lpop(k)"},
	{"RPUSH k a b", "LPOP k 2", "lpop(k) del(k)"},
	{"RPUSH k a b c", "LPOP k 2", "lpop(k)"},
	{"RPUSH k a b", "RPOP k 5", "rpop(k) del(k)"},
	{"", "LPOP k", ""},
	{"RPUSH k a b", "LSET k 0 x", "lset(k)"},
	{"RPUSH k a b", "LINSERT k BEFORE a x", "linsert(k)"},
	{"RPUSH k a b", "LINSERT k BEFORE z x", ""},
	{"RPUSH k a b a", "LREM k 0 a", "lrem(k)"},
	{"RPUSH k a a", "LREM k 0 a", "lrem(k) del(k)"},
	{"RPUSH k a b", "LREM k 0 z", ""},
	{"RPUSH k a b c", "LTRIM k 0 1", "ltrim(k)"},
	{"RPUSH k a b c", "LTRIM k 5 6", "ltrim(k) del(k)"},
	{"RPUSH k a b c", "LTRIM k 0 -1", "ltrim(k)"},
	{"RPUSH k a b", "LMOVE k d LEFT RIGHT", "new(d) rpush(d) lpop(k)"},
	{"RPUSH k a", "LMOVE k d LEFT RIGHT", "new(d) rpush(d) lpop(k) del(k)"},
	{"RPUSH k a b", "LMOVE k k LEFT RIGHT", "rpush(k) lpop(k)"},
	{"RPUSH k a", "LMOVE k k LEFT RIGHT", "rpush(k) lpop(k)"},
	{"RPUSH k a; RPUSH d x", "RPOPLPUSH k d", "lpush(d) rpop(k) del(k)"},
	{"RPUSH k a b", "LMPOP 2 x k LEFT COUNT 5", "lpop(k) del(k)"},
	{"RPUSH k a b", "LMPOP 1 k RIGHT", "rpop(k)"},
	{"RPUSH k a b", "BLPOP k 0", "lpop(k)"},
	{"RPUSH k a", "BRPOP k 0", "rpop(k) del(k)"},
	{"RPUSH k a", "BLMOVE k d LEFT LEFT 0", "new(d) lpush(d) lpop(k) del(k)"},
	{"RPUSH k a", "BLMPOP 0 1 k LEFT", "lpop(k) del(k)"},
	{"", "HSET h a 1 b 2", "new(h) hset(h)"},
	{"HSET h a 1", "HSET h a 1", "hset(h)"},
	{"", "HMSET h a 1", "new(h) hset(h)"},
	{"", "HSETNX h a 1", "new(h) hset(h)"},
	{"HSET h a 1", "HSETNX h a 2", ""},
	{"HSET h a 1 b 2", "HDEL h a", "hdel(h)"},
	{"HSET h a 1", "HDEL h a", "hdel(h) del(h)"},
	{"HSET h a 1", "HDEL h z", ""},
	{"", "HINCRBY h a 1", "new(h) hincrby(h)"},
	{"", "HINCRBYFLOAT h a 1.5", "new(h) hincrbyfloat(h)"},
	{"HSET h a x", "HINCRBY h a 1", ""},
	{"", "SADD s a b", "new(s) sadd(s)"},
	{"SADD s a", "SADD s a", ""},
	{"SADD s a b", "SREM s a", "srem(s)"},
	{"SADD s a", "SREM s a", "srem(s) del(s)"},
	{"SADD s a", "SREM s z", ""},
	{"SADD s a b", "SPOP s", "spop(s)"},
	{"SADD s a", "SPOP s", "spop(s) del(s)"},
	{"SADD s a b c", "SPOP s 2", "spop(s)"},
	{"SADD s a b", "SPOP s 2", "spop(s) del(s)"},
	{"SADD s a b", "SPOP s 5", "spop(s) del(s)"},
	{"SADD s a b", "SPOP s 0", ""},
	{"SADD s a; SADD d b", "SMOVE s d a", "srem(s) del(s) sadd(d)"},
	{"SADD s a b", "SMOVE s d a", "srem(s) new(d) sadd(d)"},
	{"SADD s a; SADD d a", "SMOVE s d a", "srem(s) del(s)"},
	{"SADD s a", "SMOVE s s a", ""},
	{"SADD a x y; SADD b y z", "SINTERSTORE d a b", "new(d) sinterstore(d)"},
	{"SADD a x; SADD b z", "SINTERSTORE d a b", ""},
	{"SADD a x; SADD b z; SET d v", "SINTERSTORE d a b", "del(d)"},
	{"SADD a x y; SADD b y z", "SUNIONSTORE d a b", "new(d) sunionstore(d)"},
	{"SADD a x y; SADD b y z", "SDIFFSTORE d a b", "new(d) sdiffstore(d)"},
	{"SADD a x; SET d 1", "SDIFFSTORE d a a", "del(d)"},
	{"SADD a x y; SADD d q", "SUNIONSTORE d a", "sunionstore(d)"},
	{"", "ZADD z 1 a", "new(z) zadd(z)"},
	{"ZADD z 1 a", "ZADD z 1 a", ""},
	{"ZADD z 1 a", "ZADD z 2 a", "zadd(z)"},
	{"ZADD z 1 a", "ZADD z INCR 2 a", "zincr(z)"},
	{"ZADD z NX 1 a", "ZADD z NX 2 a", ""},
	{"", "ZADD z XX 1 a", ""},
	{"ZADD z 1 a", "ZADD z GT 0 a", ""},
	{"", "ZINCRBY z 1 a", "new(z) zincr(z)"},
	{"ZADD z 1 a", "ZINCRBY z 1 a", "zincr(z)"},
	{"ZADD z 1 a 2 b", "ZREM z a", "zrem(z)"},
	{"ZADD z 1 a", "ZREM z a", "zrem(z) del(z)"},
	{"ZADD z 1 a", "ZREM z q", ""},
	{"ZADD z 1 a 2 b", "ZREMRANGEBYSCORE z 0 1", "zremrangebyscore(z)"},
	{"ZADD z 1 a 2 b", "ZREMRANGEBYRANK z 0 -1", "zremrangebyrank(z) del(z)"},
	{"ZADD z 1 a 2 b", "ZREMRANGEBYLEX z - +", "zremrangebylex(z) del(z)"},
	{"ZADD z 1 a 2 b", "ZREMRANGEBYLEX z [x +", ""},
	{"ZADD z 1 a 2 b", "ZPOPMIN z", "zpopmin(z)"},
	{"ZADD z 1 a", "ZPOPMAX z", "zpopmax(z) del(z)"},
	{"ZADD z 1 a 2 b", "ZPOPMIN z 5", "zpopmin(z) del(z)"},
	{"ZADD z 1 a 2 b", "ZPOPMIN z 0", ""},
	{"", "ZPOPMIN z", ""},
	{"ZADD z 1 a 2 b", "ZMPOP 1 z MIN", "zpopmin(z)"},
	{"ZADD z 1 a", "BZPOPMIN z 0", "zpopmin(z) del(z)"},
	{"ZADD z 1 a 2 b", "BZMPOP 0 1 z MAX COUNT 10", "zpopmax(z) del(z)"},
	{"ZADD a 1 x; ZADD b 2 x", "ZUNIONSTORE d 2 a b", "new(d) zunionstore(d)"},
	{"ZADD a 1 x; ZADD b 2 y", "ZINTERSTORE d 2 a b", ""},
	{"ZADD a 1 x; ZADD b 2 y; SET d v", "ZINTERSTORE d 2 a b", "del(d)"},
	{"ZADD a 1 x; ZADD b 2 y", "ZDIFFSTORE d 2 a b", "new(d) zdiffstore(d)"},
	{"ZADD a 1 x 2 y", "ZRANGESTORE d a 0 -1", "new(d) zrangestore(d)"},
	{"ZADD a 1 x 2 y", "ZRANGESTORE d a 5 6", ""},
	{"ZADD a 1 x; ZADD d 1 q", "ZUNIONSTORE d 1 a", "zunionstore(d)"},
	{"", "XADD s * f v", "new(s) xadd(s)"},
	{"", "XADD s 1-1 f v", "new(s) xadd(s)"},
	{"XADD s 1-1 f v", "XADD s 2-1 f v", "xadd(s)"},
	{"", "XADD s NOMKSTREAM * f v", ""},
	{"XADD s 1-1 f v; XADD s 2-1 f v", "XADD s MAXLEN 1 3-1 f v", "xadd(s) xtrim(s)"},
	{"XADD s 1-1 f v", "XADD s MAXLEN 5 3-1 f v", "xadd(s)"},
	{"XADD s 1-1 f v; XADD s 2-1 f v", "XTRIM s MAXLEN 1", "xtrim(s)"},
	{"XADD s 1-1 f v", "XTRIM s MAXLEN 5", ""},
	{"XADD s 1-1 f v; XADD s 2-1 f v", "XDEL s 1-1", "xdel(s)"},
	{"XADD s 1-1 f v", "XDEL s 1-1", "xdel(s)"},
	{"XADD s 1-1 f v", "XDEL s 9-9", ""},
	{"XADD s 1-1 f v", "XSETID s 5-5", "xsetid(s)"},
	{"XADD s 1-1 f v", "XGROUP CREATE s g 0", "xgroup-create(s)"},
	{"", "XGROUP CREATE s g 0 MKSTREAM", "new(s) xgroup-create(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0", "XGROUP CREATE s g 0", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0", "XGROUP SETID s g $", "xgroup-setid(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0", "XGROUP DESTROY s g", "xgroup-destroy(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0", "XGROUP CREATECONSUMER s g c", "xgroup-createconsumer(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XGROUP CREATECONSUMER s g c", "XGROUP CREATECONSUMER s g c", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XGROUP CREATECONSUMER s g c", "XGROUP DELCONSUMER s g c", "xgroup-delconsumer(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0", "XGROUP DELCONSUMER s g c", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0", "XREADGROUP GROUP g c STREAMS s >", "xgroup-createconsumer(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >", "XREADGROUP GROUP g c STREAMS s >", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >", "XREADGROUP GROUP g c2 STREAMS s 0", "xgroup-createconsumer(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >", "XACK s g 1-1", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >", "XCLAIM s g c2 0 1-1", "xgroup-createconsumer(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >", "XCLAIM s g c 0 1-1", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >", "XAUTOCLAIM s g c2 0 0", "xgroup-createconsumer(s)"},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >; XDEL s 1-1", "XAUTOCLAIM s g c2 0 0", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >; XDEL s 1-1", "XCLAIM s g c2 0 1-1", ""},
	{"XADD s 1-1 f v; XGROUP CREATE s g 0", "XREADGROUP GROUP g c NOACK STREAMS s >", "xgroup-createconsumer(s)"},
	{"", "PFADD h a b", "new(h) pfadd(h)"},
	{"PFADD h a", "PFADD h a", ""},
	{"", "PFADD h", "new(h) pfadd(h)"},
	{"PFADD h a", "PFADD h", ""},
	{"PFADD a x; PFADD b y", "PFMERGE d a b", "new(d) pfadd(d)"},
	{"PFADD a x; PFADD d z", "PFMERGE d a", "pfadd(d)"},
	{"", "PFMERGE d", "new(d) pfadd(d)"},
	{"PFADD h a", "PFCOUNT h", ""},
	{"", "GEOADD g 13.36 38.11 a", "new(g) zadd(g)"},
	{"GEOADD g 13.36 38.11 a", "GEOADD g 13.36 38.11 a", ""},
	{"GEOADD g 13.36 38.11 a 15.08 37.5 b", "GEOSEARCHSTORE d g FROMLONLAT 15 37 BYRADIUS 200 km", "new(d) geosearchstore(d)"},
	{"GEOADD g 13.36 38.11 a 15.08 37.5 b", "GEOSEARCHSTORE d g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", "new(d) geosearchstore(d)"},
	{"GEOADD g 13.36 38.11 a", "GEOSEARCHSTORE d g FROMLONLAT 100 37 BYRADIUS 1 km", ""},
	{"GEOADD g 13.36 38.11 a; SET d x", "GEOSEARCHSTORE d g FROMLONLAT 100 37 BYRADIUS 1 km", "del(d)"},
	{"GEOADD g 13.36 38.11 a 15.08 37.5 b", "GEORADIUS g 15 37 200 km STORE d", "new(d) georadiusstore(d)"},
	{"GEOADD g 13.36 38.11 a 15.08 37.5 b", "GEORADIUSBYMEMBER g a 200 km STOREDIST d", "new(d) georadiusstore(d)"},
	{"", "SET k v EXAT 1", "new(k) set(k) expire(k)"},
	{"SET k v", "SET k w EXAT 1", "set(k) expire(k)"},
	{"SET k v", "SET k w PXAT 1 GET", "set(k) expire(k)"},
	{"SET k v PX 1; SLEEPMS 20", "SET k w", "expired(k) new(k) set(k)"},
	{"SET k v PX 1; SLEEPMS 20", "DEL k", "expired(k)"},
	{"SET k v PX 1; SLEEPMS 20", "RPUSH k a", "expired(k) new(k) rpush(k)"},
	{"SET k v PX 1; SLEEPMS 20", "APPEND k a", "expired(k) new(k) append(k)"},
	{"SET k v PX 1; SLEEPMS 20", "INCR k", "expired(k) new(k) incrby(k)"},
	{"SET j v PX 1; SET k x; SLEEPMS 20", "RENAME k j", "expired(j) new(j) rename_from(k) rename_to(j)"},
	{"SET j v PX 1; SET k x; SLEEPMS 20", "COPY k j", "expired(j) new(j) copy_to(j)"},
	{"HSET h a 1", "HSET h a 2 b 3", "hset(h)"},
	{"HSET h a 1 b 2", "HDEL h a b c", "hdel(h) del(h)"},
	{"SADD s a b", "SREM s a b c", "srem(s) del(s)"},
	{"RPUSH k a b c", "LPOP k 0", ""},
	{"RPUSH k a b c", "RPOP k 3", "rpop(k) del(k)"},
	{"RPUSH k a; RPUSH d b", "LMOVE k d RIGHT LEFT", "lpush(d) rpop(k) del(k)"},
	{"SET d x", "RPUSH k a; LMOVE k d LEFT LEFT", "new(k) rpush(k)"},
	{"ZADD z 1 a 2 b", "ZADD z CH 1 a 3 b 4 c", "zadd(z)"},
	{"ZADD z 1 a", "ZADD z INCR 0 a", ""},
	{"ZADD z 1 a", "ZINCRBY z 0 a", ""},
	{"ZADD z 1 a 2 b 3 c", "ZPOPMAX z 2", "zpopmax(z)"},
	{"ZADD a 1 x; ZADD d 1 y", "ZINTERSTORE d 2 a b", "del(d)"},
	{"ZADD a 1 x; ZADD d 1 y", "ZRANGESTORE d a 5 6", "del(d)"},
	{"SADD a x; ZADD b 1 x", "ZUNIONSTORE d 2 a b", "new(d) zunionstore(d)"},
	{"GEOADD g 13.36 38.11 a", "GEOADD g XX 13.5 38.11 a", "zadd(g)"},
	{"GEOADD g 13.36 38.11 a", "GEOADD g NX 13.5 38.11 b", "zadd(g)"},
	{"SET d x", "GEOSEARCHSTORE d nosuch FROMLONLAT 15 37 BYRADIUS 200 km", "del(d)"},
	{"SET k v", "GETEX k PXAT 1", "del(k)"},
	{"SET k v", "GETEX k EX 10", "expire(k)"},
	{"SETEX k 10 v", "SET k w KEEPTTL", "set(k)"},
	{"SETEX k 10 v", "SET k w KEEPTTL EX 5", ""},
	{"RPUSH k c a b", "SORT k ALPHA STORE d", "new(d) sortstore(d)"},
	{"RPUSH k c a b; SET d x", "SORT k ALPHA STORE d", "sortstore(d)"},
	{"RPUSH k c a b; RPUSH d x", "SORT k ALPHA STORE d", "sortstore(d)"},
	{"SET k v", "COPY k j; COPY k j", "new(j) copy_to(j)"},
	{"SET k v; SET j v", "MSET k 1 j 2 z 3", "set(k) set(j) new(z) set(z)"},
	{"XADD s 1-1 f v", "XADD s MINID 5 6-1 f v", "xadd(s) xtrim(s)"},
	{"XADD s 1-1 f v; XADD s 2-1 f v", "XTRIM s MINID 2", "xtrim(s)"},
	{"XADD s 1-1 f v", "XADD s NOMKSTREAM 2-1 f v", "xadd(s)"},
	{"XGROUP CREATE s g $ MKSTREAM", "XREADGROUP GROUP g c COUNT 1 STREAMS s >", ""},
	{"SET k 10", "DECRBY k 20", "incrby(k)"},
	{"SET k 1.5", "INCRBYFLOAT k 0", "incrbyfloat(k)"},
	{"HSET h f 1", "HINCRBYFLOAT h f 0", "hincrbyfloat(h)"},
	{"SET k v", "SETRANGE k 1 v", "setrange(k)"},
	{"SET k ab", "SETRANGE k 10 x", "setrange(k)"},
	{"", "SETBIT k 100 0", "new(k) setbit(k)"},
	{"SET k v", "SETBIT k 100 0", "setbit(k)"},
	{"", "BITFIELD k SET u8 0 0", "new(k) setbit(k)"},
	{"SET k v", "BITFIELD k SET u8 0 118", ""},
	{"SET k v", "BITFIELD k INCRBY u8 0 200 OVERFLOW FAIL INCRBY u8 0 200", "setbit(k)"},
	{"", "BITFIELD k OVERFLOW FAIL INCRBY u8 0 300", "new(k)"},
	{"SET a ab", "BITOP NOT d a", "new(d) set(d)"},
	{"LPUSH k a b; LPUSH k2 c", "DEL k k2 k3", "del(k) del(k2)"},
	{"LPUSH k a", "LINSERT k AFTER a b", "linsert(k)"},
	{"SET k v", "LPUSH k a", ""},
	{"RPUSH k a", "RPUSHX k b c", "rpush(k)"},
	{"HSET h a 1", "HSETNX h b 1", "hset(h)"},
	{"SADD s 1 2 3", "SPOP s 3", "spop(s) del(s)"},
	{"SADD s a; SADD d b", "SINTERSTORE d s", "sinterstore(d)"},
	{"SADD s a; SADD d b", "SDIFFSTORE d s s", "del(d)"},
	{"SET k v PX 1; SLEEPMS 20", "GET k", "expired(k)"},
	{"SET k v PX 1; SLEEPMS 20", "SETNX k w", "expired(k) new(k) set(k)"},
	{"SET k v PX 1; SLEEPMS 20", "MSET k w", "expired(k) new(k) set(k)"},
	{"SET k v PX 1; SLEEPMS 20", "EXPIRE k 10", "expired(k)"},
	{"SET k v PX 1; SLEEPMS 20", "HSET k a 1", "expired(k) new(k) hset(k)"},
	{"SET k v PX 1; SLEEPMS 20", "SADD k a", "expired(k) new(k) sadd(k)"},
	{"SET k v PX 1; SLEEPMS 20", "ZADD k 1 a", "expired(k) new(k) zadd(k)"},
	{"SET k v PX 1; SLEEPMS 20", "XADD k 1-1 a 1", "expired(k) new(k) xadd(k)"},
	{"SET k v PX 1; SLEEPMS 20", "SETBIT k 1 1", "expired(k) new(k) setbit(k)"},
	{"SET k v PX 1; SLEEPMS 20", "PFADD k a", "expired(k) new(k) pfadd(k)"},
	{"SET d v PX 1; SADD a x; SLEEPMS 20", "SUNIONSTORE d a", "expired(d) new(d) sunionstore(d)"},
	{"SET d v PX 1; RPUSH k a; SLEEPMS 20", "LMOVE k d LEFT LEFT", "expired(d) new(d) lpush(d) lpop(k) del(k)"},
	{"", "RESTORE k 0 hex:0001760a009108ceb219388ace", "new(k) restore(k)"},
	{"SET k x", "RESTORE k 0 hex:0001760a009108ceb219388ace REPLACE", "new(k) restore(k)"},
	{"SET k x", "RESTORE k 1 hex:0001760a009108ceb219388ace REPLACE ABSTTL", "del(k)"},
	{"", "RESTORE k 1 hex:0001760a009108ceb219388ace ABSTTL", ""},
	{"", "RESTORE k 10000 hex:1201020d0d0000000200816102816202ff0a0068eb0a891341bbb1", "new(k) restore(k)"},
	{"", "EVAL redis.call('set',KEYS[1],'1')\\sredis.call('incr',KEYS[1])\\sredis.call('del',KEYS[1]) 1 x", "new(x) set(x) incrby(x) del(x)"},
	{"SET k v", "GETEX k PX 1; GETEX k PERSIST", "expire(k) persist(k)"},
}

// notifyDiffers maps a case (setup || cmds) to slotraft's events where they
// knowingly differ from Redis 7.0.15's, and why.
var notifyDiffers = map[string]struct{ want, why string }{
	"SET k v PX 1; SLEEPMS 20 || GET k":       {"", "reads never mutate: the leader's active expiry emits expired"},
	"SET k v PX 1; SLEEPMS 20 || EXPIRE k 10": {"", "a write that does not replace an expired key leaves it to active expiry"},
	"|| SET k v EXAT 1":                       {"new(k) set(k) expire(k) expired(k)", "a past expiry deletes the key at once, so it expires at once"},
	"SET k v || SET k w EXAT 1":               {"set(k) expire(k) expired(k)", "a past expiry deletes the key at once"},
	"SET k v || SET k w PXAT 1 GET":           {"set(k) expire(k) expired(k)", "a past expiry deletes the key at once"},
	"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >; XDEL s 1-1 || XAUTOCLAIM s g c2 0 0": {
		"xgroup-createconsumer(s)", "Redis 7.2 creates XAUTOCLAIM's consumer up front (7.0 only when it claims)"},
	"XADD s 1-1 f v; XGROUP CREATE s g 0; XREADGROUP GROUP g c STREAMS s >; XDEL s 1-1 || XCLAIM s g c2 0 1-1": {
		"xgroup-createconsumer(s)", "Redis 7.2 creates XCLAIM's consumer up front (7.0 only when it claims)"},
}

// notifyArgs splits a command as the cases spell them.
func notifyArgs(t *testing.T, line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(line) {
		switch {
		case f == `""`:
			f = ""
		case strings.HasPrefix(f, "hex:"):
			b, err := hex.DecodeString(f[4:])
			if err != nil {
				t.Fatal(err)
			}
			f = string(b)
		}
		out = append(out, []byte(strings.ReplaceAll(f, `\s`, " ")))
	}
	return out
}

// notifyRun applies each ";"-separated command of cmds as its own entry
// and returns the events collected, as event(key).
func (h *harness) notifyRun(t *testing.T, cmds string) string {
	var evs []string
	h.applyLines(t, cmds, func(r *ApplyResult) {
		for _, e := range r.Events {
			evs = append(evs, e.Name+"("+string(e.Key)+")")
		}
	})
	return strings.Join(evs, " ")
}

// applyLines applies each ";"-separated command of cmds as its own entry
// ("SLEEPMS n" advances the clock) and hands each result to each.
func (h *harness) applyLines(t *testing.T, cmds string, each func(*ApplyResult)) {
	for _, line := range strings.Split(cmds, ";") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if n, ok := strings.CutPrefix(line, "SLEEPMS "); ok {
			ms, _ := strconv.ParseInt(n, 10, 64)
			h.now += ms
			continue
		}
		h.idx++
		r, err := h.s.ApplyResult(h.idx, &Entry{Type: EntryCommands, Now: h.now, Seed: h.idx, Cmds: [][][]byte{notifyArgs(t, line)}})
		if err != nil {
			t.Fatal(err)
		}
		each(r)
	}
}

func TestNotifyEventsLikeRedis(t *testing.T) {
	for _, tc := range notifyCases {
		name := strings.TrimSpace(tc.setup + " || " + tc.cmds)
		t.Run(tc.cmds, func(t *testing.T) {
			h := newHarness(t)
			var on NotifyClass
			h.s.notifyClasses = func() NotifyClass { return on }
			h.notifyRun(t, tc.setup)
			on = (NotifyAll | NotifyNew | NotifyKeyspace | NotifyKeyevent).Collected()
			want := tc.want
			if d, ok := notifyDiffers[name]; ok {
				want = d.want
			}
			if got := h.notifyRun(t, tc.cmds); got != want {
				t.Errorf("%s:\n got  %q\n want %q", name, got, want)
			}
		})
	}
}

// notifyAll collects every class, as notify-keyspace-events KEAn does.
var notifyAll = (NotifyAll | NotifyNew | NotifyKeyspace | NotifyKeyevent).Collected()

func TestNotifyServedBlockedAndTransactions(t *testing.T) {
	cases := []struct{ name, cmds, want string }{
		{"blocked pop served after the push", "BLPOP bk 0; RPUSH bk a",
			"new(bk) rpush(bk) lpop(bk) del(bk)"},
		{"blocked move served after the push", "BLMOVE src bd LEFT RIGHT 0; RPUSH src x y",
			"new(src) rpush(src) new(bd) rpush(bd) lpop(src)"},
		{"script", `EVAL redis.call('set',KEYS[1],'1')\sredis.call('incr',KEYS[1])\sredis.call('del',KEYS[1]) 1 x`,
			"new(x) set(x) incrby(x) del(x)"},
		{"failed command", "SET k v; LPUSH k a", "new(k) set(k)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.s.notifyClasses = func() NotifyClass { return notifyAll }
			if got := h.notifyRun(t, tc.cmds); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("exec", func(t *testing.T) {
		h := newHarness(t)
		h.s.notifyClasses = func() NotifyClass { return notifyAll }
		exec := ExecCommand(nil, [][][]byte{fields("SET a 1"), fields("INCR a"), fields("DEL a")})
		r, err := h.s.ApplyResult(1, &Entry{Type: EntryCommands, Now: t0, Cmds: [][][]byte{exec}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := showEvents(r.Events), "new(a) set(a) incrby(a) del(a)"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

func showEvents(evs []Event) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = e.Name + "(" + string(e.Key) + ")"
	}
	return strings.Join(s, " ")
}

// TestNotifyActiveExpiry: an EntryExpire emits "expired" for each key it
// deletes, and nothing for one rewritten since the leader proposed it.
func TestNotifyActiveExpiry(t *testing.T) {
	h := newHarness(t)
	h.notifyRun(t, "SET a 1 PX 10; SET b 1 PX 10; SET c 1 PX 10; SLEEPMS 20; SET b 2")
	h.s.notifyClasses = func() NotifyClass { return notifyAll }
	r, err := h.s.ApplyResult(100, &Entry{Type: EntryExpire, Now: h.now, Cmds: [][][]byte{{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := showEvents(r.Events), "expired(a) expired(c)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, e := range r.Events {
		if e.Class != NotifyExpired {
			t.Errorf("%s: class %v, want x", e.Name, e.Class)
		}
	}
}

// TestNotifyClassFilter: only the configured classes are collected, and
// nothing without K or E.
func TestNotifyClassFilter(t *testing.T) {
	const script = "SET k v EX 10; LPUSH l a; RPOP l; HSET h f v; DEL k h; SET e v PX 1; SLEEPMS 5; SET e w"
	cases := []struct{ config, want string }{
		{"", ""},
		{"A", ""}, // neither K nor E: nowhere to publish
		{"Kx", "expired(e)"},
		{"Ex", "expired(e)"},
		{"KEA", "set(k) expire(k) lpush(l) rpop(l) del(l) hset(h) del(k) del(h) set(e) expire(e) expired(e) set(e)"},
		{"KEAn", "new(k) set(k) expire(k) new(l) lpush(l) rpop(l) del(l) new(h) hset(h) del(k) del(h) new(e) set(e) expire(e) expired(e) new(e) set(e)"},
		{"E$", "set(k) set(e) set(e)"},
		{"Kg", "expire(k) del(l) del(k) del(h) expire(e)"},
		{"Kln", "new(k) new(l) lpush(l) rpop(l) new(h) new(e) new(e)"},
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			f, err := ParseNotifyClasses(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			h.s.notifyClasses = f.Collected
			if got := h.notifyRun(t, script); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestNotifyClassesConfig: notify-keyspace-events parses and prints as
// Redis 7's CONFIG SET / CONFIG GET do (checked against redis-server).
func TestNotifyClassesConfig(t *testing.T) {
	cases := []struct{ in, out string }{
		{"", ""}, {"A", "A"}, {"KEA", "AKE"}, {"AKE", "AKE"}, {"KA", "AK"}, {"Kn", "nK"},
		{"KEAnm", "AKEm"}, {"gx", "gx"}, {"d", "d"}, {"Ed", "dE"}, {"KEAmd", "AKEm"},
		{"$lshzxet", "$lshzxet"}, {"$lshzxetd", "$lshzxetd"}, {"g$lshzxetd", "A"},
		{"g$lshzxet", "g$lshzxet"}, {"Ad", "A"}, {"An", "A"}, {"gn", "gn"}, {"EEKK", "KE"},
		{"m", "m"}, {"x", "x"}, {"e", "e"},
	}
	for _, tc := range cases {
		f, err := ParseNotifyClasses(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := f.String(); got != tc.out {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.out)
		}
	}
	for _, bad := range []string{"KEAzq", "a", " ", "K E", "k", "\x00", "é"} {
		if _, err := ParseNotifyClasses(bad); !errors.Is(err, ErrNotifyClasses) {
			t.Errorf("%q: err %v, want ErrNotifyClasses", bad, err)
		}
	}
	if got := ErrNotifyClasses.Error(); got != "Invalid event class character. Use 'Ag$lshzxeKEtmdn'." {
		t.Errorf("message %q", got)
	}
}

// FuzzParseNotifyClasses: CONFIG SET's value comes from the network. A
// parsed value prints as letters that parse back to it (except n, which
// Redis does not print next to A).
func FuzzParseNotifyClasses(f *testing.F) {
	for _, s := range []string{"", "KEA", "AKEm", "gn$", "x", "KEAzq", "An"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseNotifyClasses(s)
		if err != nil {
			return
		}
		back, err := ParseNotifyClasses(c.String())
		if err != nil {
			t.Fatalf("%q prints as %q which does not parse: %v", s, c.String(), err)
		}
		want := c
		if c&NotifyAll == NotifyAll {
			want &^= NotifyNew
		}
		if back != want {
			t.Fatalf("%q: %v prints as %q, parses back as %v", s, c, c.String(), back)
		}
	})
}

// TestNotifyOffAllocatesNothing: with notifications off a write allocates
// exactly what it does without the feature.
func TestNotifyOffAllocatesNothing(t *testing.T) {
	measure := func(classes func() NotifyClass) float64 {
		s := NewState()
		s.notifyClasses = classes
		e := &Entry{Type: EntryCommands, Now: t0, Cmds: [][][]byte{fields("SET key value")}}
		var idx uint64
		return testing.AllocsPerRun(200, func() {
			idx++
			if _, err := s.ApplyResult(idx, e); err != nil {
				t.Fatal(err)
			}
		})
	}
	none := measure(nil)
	off := measure(func() NotifyClass { return 0 })
	on := measure(func() NotifyClass { return notifyAll })
	if off != none {
		t.Errorf("notifications off: %v allocations per SET, without the feature %v", off, none)
	}
	if on <= off {
		t.Errorf("notifications on: %v allocations per SET, off %v: events not collected?", on, off)
	}
	var c Ctx
	if n := testing.AllocsPerRun(100, func() { c.notify(NotifyString, "set", []byte("k")) }); n != 0 || len(c.Events) != 0 {
		t.Errorf("notify with nothing collected: %v allocations, %d events", n, len(c.Events))
	}
}

func benchmarkSet(b *testing.B, classes NotifyClass) {
	s := NewState()
	s.notifyClasses = func() NotifyClass { return classes }
	e := &Entry{Type: EntryCommands, Now: t0, Cmds: [][][]byte{fields("SET key value")}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := s.ApplyResult(uint64(i+1), e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetWithNotifyOff(b *testing.B) { benchmarkSet(b, 0) }
func BenchmarkSetWithNotifyOn(b *testing.B)  { benchmarkSet(b, notifyAll) }
