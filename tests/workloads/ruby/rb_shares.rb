# rb_shares.rb - Ruby methods with a known share of the CPU.
#
# Every call of unit does the same work. Each round of Runner#round calls
# work_a six times, work_b three times and work_c once, so of the samples
# taken inside the three, 60%, 30% and 10% are in each (the round's own
# bookkeeping is outside all of them and not counted). The ten calls come
# in a new random order every round: a round lasts about a millisecond,
# as long as a 999 Hz sampler's period, and in a fixed order the samples
# would lock onto a few places in the round instead of being independent
# draws of the 60/30/10 shares.
#
# The calls go through a case, not send or each: a C method between
# round and work_x would stand there in the native stack, and the chain
# <main> -> run -> round -> work_x -> unit is what the test reads.
#
# Usage: ruby rb_shares.rb [SECONDS]

def unit
  s = 0
  i = 0
  while i < 2000
    s += i * i
    i += 1
  end
  s
end

def work_a
  unit
end

def work_b
  unit
end

def work_c
  unit
end

class Runner
  def initialize
    @rng = Random.new
    @calls = [0] * 6 + [1] * 3 + [2]
  end

  def round
    @calls.shuffle!(random: @rng)
    i = 0
    while i < @calls.size
      case @calls[i]
      when 0 then work_a
      when 1 then work_b
      else work_c
      end
      i += 1
    end
  end
end

def run(seconds)
  finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
  runner = Runner.new
  runner.round while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
end

run(ARGV.empty? ? 1e9 : ARGV[0].to_f)
