# rb_handler.rb - a Ruby handler whose slow calls run one extra method.
#
# Handler#call(i) busy-waits in common 100 + (37 i mod 400) us, spread
# evenly over [100, 500) so that few calls lie near any threshold; one
# call in 50 (i % 50 == 49) also runs slow_extra, which busy-waits
# SLOW_US. So 2% of the calls take at least SLOW_US + 100 us and the
# others less than 500 us (unless preempted): the p95 threshold lies
# among the fast calls, every slow_extra call is above it, and every
# sample of slow_extra is in a slow call.
#
# Ruby 3.1 fires its method__entry/method__return USDT probes for Ruby
# methods only while a TracePoint for :call/:return is enabled (the VM
# reaches them through its trace instructions): this workload enables an
# empty one, as a program traced with rb:Class#method must (README, Ruby).
#
# Usage: ruby rb_handler.rb [SECONDS] [SLOW_US]

TracePoint.new(:call, :return) {}.enable

SECONDS = (ARGV[0] || 60).to_f
SLOW_US = (ARGV[1] || 3000).to_f

def now_us
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
end

class Handler
  def spin(us)
    t_end = now_us + us
    x = 0
    x += 1 while now_us < t_end
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
