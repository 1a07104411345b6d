# rb_singleton.rb - singleton methods (def self.x) traced and split.
#
# Codec.decode(i) spins 1000 + (37 i mod 2000) us of its thread's CPU
# time; one call in 50 (i % 50 == 49) also runs Codec.slow_path, SLOW_US
# (20 ms) of CPU time: as in rb_handler.rb, the p95 threshold lies among
# the spread of the other calls, below every call of slow_path.
# Ruby's probes name a singleton method by its class and method
# (rb:Codec#decode), its frame is "Codec.decode": the split must find the
# one by the other, and rank Codec.slow_path first.
#
# Like rb_handler.rb it enables an empty TracePoint: Ruby 3.1 fires
# method__entry/return for Ruby methods only while one is enabled.
#
# Usage: ruby rb_singleton.rb [SECONDS]

TracePoint.new(:call, :return) {}.enable

SECONDS = (ARGV[0] || 60).to_f
SLOW_US = 20_000

def cpu_us
  Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :microsecond)
end

class Codec
  def self.spin(us)
    t_end = cpu_us + us
    x = 0
    x += 1 while cpu_us < t_end
    x
  end

  def self.slow_path
    spin(SLOW_US)
  end

  def self.decode(i)
    spin(1000 + (37 * i) % 2000)
    slow_path if i % 50 == 49
  end
end

stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SECONDS
i = 0
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
  Codec.decode(i)
  i += 1
end
