# frozen_string_literal: true

# rb_threads.rb - Ruby threads, and a block called by a C method.
#
# Two threads run at once, one calling via_each, the other direct, and
# never the other one. via_each's work runs in a block that Array#each, a
# C method, yields to: below via_each's frame stand Array#each's native
# frames, then the block's own frame, then unit.
#
# Usage: ruby rb_threads.rb SECONDS

def unit
  s = 0
  i = 0
  while i < 2000
    s += i * i
    i += 1
  end
  s
end

def via_each
  [1, 2, 3, 4].each { |_x| unit }
end

def direct
  unit
  unit
  unit
  unit
end

def worker(kind, finish)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
    kind == :each ? via_each : direct
  end
end

finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0])
threads = [Thread.new { worker(:each, finish) }, Thread.new { worker(:direct, finish) }]
threads.each(&:join)
