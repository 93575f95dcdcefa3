package com.beust.jcommander;

/** Enough of JCommander for the peer's sources to compile (their own
 * command line is not used: bench/peers/abi's driver sets the options). */
public class JCommander {
  public static Builder newBuilder() { return new Builder(); }

  public void parse(String... args) {
    throw new UnsupportedOperationException("run the peer through bench/peers.py's driver");
  }

  public static class Builder {
    public Builder addObject(Object o) { return this; }
    public JCommander build() { return new JCommander(); }
  }
}
