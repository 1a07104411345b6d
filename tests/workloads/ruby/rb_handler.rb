# rb_handler.rb - a Ruby handler whose slow calls run one extra method.
#
# Handler#call(i) spins in common for 100 + (37 i mod 400) us of its
# thread's CPU time, spread evenly over [100, 500); one call in 50
# (i % 50 == 49) also runs slow_extra, which spins SLOW_US of CPU time
# (30 ms). A call lasts at least its CPU time, so 2% of the calls take at
# least 30 ms; the others need 0.1-0.5 ms of CPU and are as long only when
# the VM keeps them waiting for 29.5 ms, which a loaded 2-CPU VM does to
# far fewer than 3% of them: the p95 threshold lies below every
# slow_extra call, and every sample of slow_extra is in a slow call.
# (Spinning on the wall clock instead, a loaded VM stretched 5% of the
# 0.5 ms calls past a 3 ms slow_extra, and the threshold with them.)
#
# Ruby 3.1 fires its method__entry/method__return USDT probes for Ruby
# methods only while a TracePoint for :call/:return is enabled (the VM
# reaches them through its trace instructions): this workload enables an
# empty one, as a program traced with rb:Class#method must (README, Ruby).
#
# Usage: ruby rb_handler.rb [SECONDS] [SLOW_US]

TracePoint.new(:call, :return) {}.enable

SECONDS = (ARGV[0] || 60).to_f
SLOW_US = (ARGV[1] || 30_000).to_f

def now_us
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
end

def cpu_us
  Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :microsecond)
end

class Handler
  def spin(us)
    t_end = cpu_us + us
    x = 0
    x += 1 while cpu_us < t_end
    x
  end

  def common(i)
    spin(100 + (37 * i) % 400)
  end

  def slow_extra
    spin(SLOW_US)
  end

  def call(i)
    common(i)
    slow_extra if i % 50 == 49
  end
end

h = Handler.new
stop = now_us + SECONDS * 1e6
i = 0
while now_us < stop
  h.call(i)
  i += 1
end
puts "calls #{i}"
