# rb_fibers.rb - a C function of libruby (rb_ary_each: Array#each) left
# mid-call by a fiber switch: the fiber's block yields from inside each,
# and the main fiber calls each again before resuming it. Return probes on
# rb_ary_each killed the interpreter (the kernel dropped the fiber's
# pending return as dead at the main stack's call). Prints "rounds N".
# Usage: ruby rb_fibers.rb ROUNDS [wait]  (wait: read a line from stdin
# first, so that a profiler can attach with -p)
rounds = (ARGV[0] || "10000").to_i
$stdin.gets if ARGV[1] == "wait"
fib = Fiber.new { loop { [1, 2, 3].each { |x| Fiber.yield x } } }
sum = 0
rounds.times do
  sum += fib.resume
  [4].each { |y| sum += y }
end
puts "rounds #{rounds}"
