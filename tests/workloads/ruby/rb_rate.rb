# rb_rate.rb - a CPU-bound Ruby loop that reports its own throughput.
#
# Each iteration calls down eight Ruby frames and does a little arithmetic
# at the bottom, so a sample holds a stack of control frames to read.
# Every 0.5 s it prints "T_NS RATE": CLOCK_MONOTONIC in ns and the
# iterations per CPU-second of the process over the last period (its own
# CPU time, so that other load on the machine does not count as a
# slowdown). tests/bench/bench_interp.py reads it.
#
# Usage: ruby rb_rate.rb [SECONDS]

def leaf(x)
  s = x
  i = 0
  while i < 40
    s += i * i
    i += 1
  end
  s
end

def level(depth, x)
  return leaf(x) if depth.zero?

  level(depth - 1, x + 1)
end

def now(clock)
  Process.clock_gettime(clock)
end

seconds = (ARGV[0] || 1e9).to_f
$stdout.sync = true
finish = now(Process::CLOCK_MONOTONIC) + seconds
n = 0
sink = 0
t0 = now(Process::CLOCK_MONOTONIC)
c0 = now(Process::CLOCK_PROCESS_CPUTIME_ID)
loop do
  200.times do
    sink += level(8, n)
    n += 1
  end
  t = now(Process::CLOCK_MONOTONIC)
  next if t - t0 < 0.5

  c = now(Process::CLOCK_PROCESS_CPUTIME_ID)
  puts "#{Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)} #{format('%.1f', n / (c - c0))}"
  n = 0
  t0 = t
  c0 = c
  break if t >= finish
end
