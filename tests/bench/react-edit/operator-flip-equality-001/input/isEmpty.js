function isEmpty(props) {
  if (props == null) {
    return true;
  }
  return Object.keys(props).length !== 0;
}

module.exports = isEmpty;
